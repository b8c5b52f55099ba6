/**
 * The mesh's xDS resource types: type URLs and protobuf encoding (sources: shared/proto/mesh/v1).
 *
 * @module
 */
export {
  decodeResource,
  encodeResource,
  RESOURCE_TYPES,
  type ResourceTypeName,
  typeUrlOf,
} from "./resources.ts";
