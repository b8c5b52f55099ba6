/**
 * @mesh/shared: the mesh's resource types, their validation, and the pure policy logic that
 * meshd, the proxy and meshctl all call.
 *
 * @module
 */
export * from "./api/peer_authentication.ts";
