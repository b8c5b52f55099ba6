/**
 * Validation of mesh configuration text: YAML streams, documents and resources.
 *
 * @module
 */
export {
  formatIssue,
  MAX_CONFIG_BYTES,
  validateText,
  type ValidateTextOptions,
  type ValidationIssue,
  type ValidationResult,
  type ValidResource,
} from "./validate_documents.ts";
export { parseYamlDocuments, type YamlDocument } from "./yaml_documents.ts";
