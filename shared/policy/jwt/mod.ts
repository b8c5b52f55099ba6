/**
 * End-user JWT authentication (RequestAuthentication): providers, token locations and verification
 * with npm:jose, shared by the proxy and meshctl.
 *
 * @module
 */
export {
  JWT_ALGORITHMS,
  JWT_CLOCK_SKEW_SECONDS,
  JwtAuthenticator,
  type JwtOutcome,
  wwwAuthenticate,
} from "./authenticate.ts";
export {
  type ApplicableRequestAuthenticationOptions,
  applicableRequestAuthentications,
  type AppliedRequestAuthentication,
  type JwtClaimToHeader,
  type JwtHeaderLocation,
  type JwtProvider,
} from "./provider.ts";
export { type FoundToken, locationsOf, type TokenLocation, type TokenSource } from "./token_location.ts";
