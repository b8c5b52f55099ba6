/**
 * The compiled audience of a denial's explanation (shared's explanationAudience), once per
 * settings object, so a denial costs no compilation.
 *
 * @module
 */
import type { ProxySettings } from "../../shared/proxy_settings/settings.ts";
import {
  explanationAudience,
  type ExplanationSource,
} from "../../shared/proxy_settings/denial_explanation.ts";

const cache = new WeakMap<ProxySettings, (source: ExplanationSource) => boolean>();

/** Whether a source may read why its request was denied, under these settings. */
export function explanationAudienceOf(settings: ProxySettings): (source: ExplanationSource) => boolean {
  let a = cache.get(settings);
  if (a === undefined) {
    a = explanationAudience(settings.denialExplanation);
    cache.set(settings, a);
  }
  return a;
}
