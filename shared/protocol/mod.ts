/**
 * Protocol selection: which protocol a service port carries, from its `appProtocol`, its name or a
 * ServiceEntry's `protocol` (Istio's "Protocol Selection"), and automatic detection from a connection's
 * first bytes ({@link detectProtocol}).
 *
 * @module
 */
export {
  authorizationLayer,
  AUTO_DETECT,
  type SelectedProtocol,
  serviceEntryPortProtocol,
  servicePortProtocol,
} from "./protocol_selection.ts";
export { DETECT_MAX_BYTES, type DetectedProtocol, detectProtocol } from "./detect.ts";
