/**
 * Gateway TLS credentials: Kubernetes Secrets to PEM certificate, key and client CA.
 *
 * @module
 */
export {
  CA_SECRET_SUFFIX,
  CREDENTIAL_SECRET_TYPES,
  isSecretDocument,
  type ParsedSecret,
  type ParseSecretOptions,
  parseTlsSecret,
  redactSecret,
  type TlsCredential,
} from "./secret.ts";
