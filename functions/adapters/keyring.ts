import { hkdfSync } from 'node:crypto';

/**
 * The service's keys by purpose. Adapters ask a key ring for the key of their purpose; which keys a ring holds
 * is the composition root's business: on AWS each function gets only the key secrets of the purposes it needs
 * (see KEY_GROUPS), on the local stack and in tests every purpose comes from one master key.
 */
export const KEY_PURPOSES = [
  /** HMAC of a code (send stores it, check compares it). */
  'code-hash',
  /** AES-GCM of the code kept while delivery runs (send seals it, the delivery tasks open it). */
  'code-encryption',
  /** The bearer token the carrier gateway expects with each message. */
  'carrier-token',
  /** Signatures of the carrier's delivery receipts. */
  'receipt:carrier',
  /** AES-GCM of the webhook signing secrets kept in the table. */
  'webhook-secrets',
  /** MAC of an API key's body: its tag, checked in memory before any lookup (core/api-key-format.ts). */
  'api-key-tag',
] as const;
export type KeyPurpose = (typeof KEY_PURPOSES)[number];

export interface KeyRing {
  /** The 32-byte key of a purpose; throws when this ring was not given it (or, deferred, before `ready`). */
  key(purpose: KeyPurpose): Buffer;
  /** Settles when the keys can be asked for; absent when they always can. */
  ready?(): Promise<void>;
  /** False while `ready` would still wait; absent when the keys always can be asked for. */
  isReady?(): boolean;
}

/**
 * A key ring whose keys are still being read: a deployed function reads its key secrets at its first invocation,
 * and the request need not wait for them before its first round trips (the send's reads, the check's key write),
 * only before its first use of a key (core/send.ts, core/check.ts await `CodeVault.ready`). The read starts
 * unasked, right after the requests of the turn that built the ring (`eager`, for a function that needs its keys
 * on most requests), or at the first `ready()` (the console,
 * which needs its key only to add or rotate a webhook). A failed read is tried again by the next `ready()`, so a
 * brief Secrets Manager outage fails the requests that came during it (as a 500 with a code), not the container.
 */
export function deferredKeyRing(
  load: () => Promise<KeyRing>,
  { eager = true }: { eager?: boolean } = {},
): Required<KeyRing> {
  let loaded: KeyRing | undefined;
  let loading: Promise<void> | undefined;
  const ready = (): Promise<void> => {
    if (loaded) return Promise.resolve();
    loading ??= load().then(
      (ring) => {
        loaded = ring;
      },
      (error: unknown) => {
        loading = undefined;
        throw error;
      },
    );
    return loading;
  };
  // Started once the current turn's requests are on their way (the first request's authentication and reads,
  // made in the same turn): their round trips lead, the key reads overlap them. A failure surfaces at the
  // caller's own `ready()`, which reads again.
  if (eager)
    setImmediate(() => {
      ready().catch(() => undefined);
    });
  return {
    key(purpose) {
      if (!loaded) throw new Error(`The ${purpose} key was asked for before the key secrets were read`);
      return loaded.key(purpose);
    },
    ready,
    isReady: () => loaded !== undefined,
  };
}

/**
 * The purposes grouped by who needs them, one Secrets Manager secret per group on AWS. A function's environment
 * names the secrets of its groups (`env`) and nothing else; its role may read only those.
 */
export const KEY_GROUPS = {
  /** send, check */
  codeHash: { purposes: ['code-hash'], env: 'OTP_CODE_HASH_SECRET_ARN' },
  /** send, deliver */
  codeSeal: { purposes: ['code-encryption'], env: 'OTP_CODE_SEAL_SECRET_ARN' },
  /** deliver (token), receipt (signatures); the carrier gateway is configured from it too */
  carrier: { purposes: ['carrier-token', 'receipt:carrier'], env: 'OTP_CARRIER_SECRET_ARN' },
  /** webhookSender (opens), the admin command (seals) */
  webhook: { purposes: ['webhook-secrets'], env: 'OTP_WEBHOOK_SECRET_ARN' },
  /** send, check, fetch (check a key's tag); console, the admin command (issue keys) */
  apiKeyTag: { purposes: ['api-key-tag'], env: 'OTP_API_KEY_TAG_SECRET_ARN' },
} as const satisfies Record<string, { purposes: readonly KeyPurpose[]; env: string }>;
export type KeyGroup = keyof typeof KEY_GROUPS;
export const KEY_GROUP_NAMES = Object.keys(KEY_GROUPS) as KeyGroup[];

/** The group a purpose belongs to. */
export function keyGroupOf(purpose: KeyPurpose): KeyGroup {
  return KEY_GROUP_NAMES.find((group) =>
    (KEY_GROUPS[group].purposes as readonly KeyPurpose[]).includes(purpose),
  )!;
}

/** HKDF-SHA256 with a purpose label: independent 32-byte keys from one root. */
export function deriveKey(root: string, purpose: string): Buffer {
  return Buffer.from(hkdfSync('sha256', Buffer.from(root, 'utf8'), Buffer.alloc(0), `otp:${purpose}`, 32));
}

/** Every purpose from one master key (local stack, tests, bench): the keys are exactly those of before. */
export function masterKeyRing(masterKey: string): KeyRing {
  return cached((purpose) => deriveKey(masterKey, purpose));
}

/**
 * The keys of the groups whose root (the value of the group's secret) is given; each purpose's key is derived
 * from its group's root with the same label as from a master key, so a group root equal to the master key gives
 * the same keys as `masterKeyRing`. Asking for a purpose of a group not given throws, naming what is missing.
 */
export function groupKeyRing(roots: Partial<Record<KeyGroup, string>>): KeyRing {
  return cached((purpose) => {
    const group = keyGroupOf(purpose);
    const root = roots[group];
    if (!root) {
      throw new Error(
        `This function holds no ${purpose} key: it was not given the ${group} key secret (${KEY_GROUPS[group].env})`,
      );
    }
    return deriveKey(root, purpose);
  });
}

/** Derives each purpose's key once (adapters ask per request). */
function cached(derive: (purpose: KeyPurpose) => Buffer): KeyRing {
  const keys = new Map<KeyPurpose, Buffer>();
  return {
    key(purpose) {
      let key = keys.get(purpose);
      if (!key) keys.set(purpose, (key = derive(purpose)));
      return key;
    },
  };
}

/** A master key given as a string (local stack, tests), or a key ring. */
export type KeySource = KeyRing | string;

export const toKeyRing = (source: KeySource): KeyRing =>
  typeof source === 'string' ? masterKeyRing(source) : source;

/** What a key secret holds: `{"purpose": <group>, "key": <64 random characters>}`, generated by Secrets Manager. */
export const KEY_SECRET_FIELD = 'key';

/** The root held by a key secret's value; checks that the secret is the one of `group` (a wrong ARN is caught). */
export function keySecretRoot(group: KeyGroup, secretString: string | undefined, secretId: string): string {
  let value: { purpose?: unknown; [KEY_SECRET_FIELD]?: unknown };
  try {
    value = JSON.parse(secretString ?? '') as typeof value;
  } catch {
    throw new Error(`The secret ${secretId} is not the JSON of a key secret`);
  }
  if (value.purpose !== group) {
    throw new Error(
      `The secret ${secretId} holds the ${String(value.purpose)} key, not the ${group} key (${KEY_GROUPS[group].env})`,
    );
  }
  const root = value[KEY_SECRET_FIELD];
  if (typeof root !== 'string' || root.length < 32) throw new Error(`The secret ${secretId} has no key`);
  return root;
}
