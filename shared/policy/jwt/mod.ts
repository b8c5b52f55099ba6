/**
 * End-user JWT authentication (RequestAuthentication): providers, token locations and verification
 * with npm:jose, shared by the proxy and meshctl; who fetches key sets
 * (DISCO_JWT_ENABLE_REMOTE_JWKS).
 *
 * @module
 */
export {
  JWT_ALGORITHMS,
  JWT_CLOCK_SKEW_SECONDS,
  JwtAuthenticator,
  type JwtOutcome,
  keySetProblem,
  wwwAuthenticate,
} from "./authenticate.ts";
export {
  isMeshHost,
  type JwksFetcher,
  jwksFetcherOf,
  type JwksFetcherOptions,
  type JwksFetchMode,
  type JwksRegistryService,
  type JwksRule,
  jwksSourceKey,
  parseJwksFetchMode,
} from "./jwks_fetch.ts";
export {
  type ApplicableRequestAuthenticationOptions,
  applicableRequestAuthentications,
  type AppliedRequestAuthentication,
  type JwtClaimToHeader,
  type JwtHeaderLocation,
  type JwtProvider,
} from "./provider.ts";
export {
  type FoundToken,
  locationsOf,
  type TokenLocation,
  type TokenSource,
  withoutParams,
} from "./token_location.ts";
