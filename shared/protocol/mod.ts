/**
 * Protocol selection: which protocol a service port carries, from its `appProtocol`, its name or a
 * ServiceEntry's `protocol` (Istio's "Protocol Selection").
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
