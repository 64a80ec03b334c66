/**
 * The format of API keys. A key the service issues now carries a tag, a MAC of its prefix and body under the
 * deployment's own key: `otpk2_<body>_<tag>`, the body 32 random bytes in base64url and the tag the first 22
 * characters of the MAC's base64url. A request whose key's tag does not match is refused without a table read, so made-up keys cost
 * nothing but CPU. The keys issued before the tag (`otpk_<body>`) are recognised as legacy: they are looked up
 * as before, until the deployment's cut-off (docs/adr/0012-tagged-api-keys.md).
 */
import { timingSafeEqual } from 'node:crypto';
import type { ApiKeyTagger } from './ports';

const TAGGED_API_KEY_PREFIX = 'otpk2_';
const LEGACY_API_KEY_PREFIX = 'otpk_';
/** 32 bytes in base64url, unpadded. */
export const API_KEY_BODY_LENGTH = 43;
/** The first 22 base64url characters of the MAC: 132 bits, no forgery by guessing. */
export const API_KEY_TAG_LENGTH = 22;

const B64URL = '[A-Za-z0-9_-]';
// Fixed lengths: base64url may itself hold `_`, so the separator is found by position, not by splitting.
const TAGGED = new RegExp(
  `^${TAGGED_API_KEY_PREFIX}(${B64URL}{${API_KEY_BODY_LENGTH}})_(${B64URL}{${API_KEY_TAG_LENGTH}})$`,
);
const LEGACY = new RegExp(`^${LEGACY_API_KEY_PREFIX}${B64URL}{${API_KEY_BODY_LENGTH}}$`);

/** A key as written: tagged (its parts), legacy, or neither (never issued by this service). */
export type ParsedApiKey = { format: 'tagged'; signed: string; tag: string } | { format: 'legacy' };

export function parseApiKey(text: string): ParsedApiKey | undefined {
  const tagged = TAGGED.exec(text);
  if (tagged) {
    return { format: 'tagged', signed: `${TAGGED_API_KEY_PREFIX}${tagged[1]!}`, tag: tagged[2]! };
  }
  return LEGACY.test(text) ? { format: 'legacy' } : undefined;
}

/** A new key from a fresh random body (`API_KEY_BODY_LENGTH` base64url characters: 32 CSPRNG bytes). */
export function formatApiKey(body: string, tagger: ApiKeyTagger): string {
  if (!new RegExp(`^${B64URL}{${API_KEY_BODY_LENGTH}}$`).test(body)) {
    throw new Error(`An API key body is ${API_KEY_BODY_LENGTH} base64url characters`);
  }
  const signed = `${TAGGED_API_KEY_PREFIX}${body}`;
  return `${signed}_${tagger.tag(signed)}`;
}

/**
 * What a request's key is, from memory alone: `tagged` (issued by this deployment, still to be looked up: it
 * may be revoked), `forged` (the tagged format with a tag that does not match), `legacy`, or `malformed`.
 * Call it once the tagger is ready.
 */
export function classifyApiKey(
  text: string,
  tagger: ApiKeyTagger,
): 'tagged' | 'forged' | 'legacy' | 'malformed' {
  const parsed = parseApiKey(text);
  if (!parsed) return 'malformed';
  if (parsed.format === 'legacy') return 'legacy';
  const expected = Buffer.from(tagger.tag(parsed.signed));
  const given = Buffer.from(parsed.tag);
  // Constant time: the comparison tells nothing about how much of a guessed tag was right.
  return expected.length === given.length && timingSafeEqual(expected, given) ? 'tagged' : 'forged';
}
