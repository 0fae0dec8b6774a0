/**
 * The one label a message carries to its provider (SES and Resend tags, SMS `Context`, SendGrid
 * `custom_args`, the REST convention's tags, Twilio's status callback URL), and the only thing its
 * evidence is matched by. It is opaque and authenticated under a per-deployment secret:
 *
 *   label = base64url( form ‖ siv ‖ AES-256-CTR(encKey, iv = siv, plaintext) )
 *   siv   = HMAC-SHA256(macKey, form ‖ plaintext)[0..16]
 *
 * a deterministic authenticated encryption in the SIV shape (RFC 5297's construction with HMAC-SHA256 as
 * the PRF): the same row always gets the same label (a retry sends the same request, which Resend's
 * idempotency requires), the label reveals nothing of the key (no tenant, purpose, event id, recipient
 * ref, template revision or decision id reaches a provider, nor a hash of them one could confirm a guess
 * against), and only a holder of the secret can make one that opens. Form 1 carries the readable dedupe
 * key (the ledger row's key), so evidence is matched with one GetItem and no pointer item; a key too long
 * for the 256-character limit takes form 2, which carries the 32-byte key hash, and is found through the
 * `ev#<hash>` pointer its claim wrote (lib/ledger/evidencePointer.ts).
 *
 * Every provider accepts the label unchanged: [A-Za-z0-9_-], at most LABEL_MAX (256) characters (the
 * tightest documented limit; test/unit/transports/providerLabels.test.ts cites each provider's).
 */
import { createCipheriv, createHmac, timingSafeEqual } from 'node:crypto';
import { hashKey, labelCarriesKey } from '../domain/keys.js';

export { labelCarriesKey };

/** The tag / context key / custom argument name carrying the label. */
export const KEY_TAG = 'sendproof-key';

/** SES message tags, Resend tags and SMS `Context` values are limited to 256 characters. */
export const LABEL_MAX = 256;
/** What a label looks like on the wire (before it is opened). */
export const LABEL_SHAPE = /^[A-Za-z0-9_-]{1,256}$/;

const SIV_BYTES = 16;
const FORM_KEY = 1;
const FORM_HASH = 2;
// Form 1 holds 1 + 16 + at most LABEL_KEY_MAX_BYTES (lib/domain/keys.ts) = 192 bytes = LABEL_MAX characters.

/** The keys labels are sealed and opened with, derived from one per-deployment secret. */
export interface LabelKey {
  readonly enc: Buffer;
  readonly mac: Buffer;
}

const derived = new Map<string, LabelKey>();

/**
 * The label keys of a deployment secret (the content-hash secret the dispatcher already holds, read from
 * Secrets Manager in AWS). Separate HMAC-derived keys, so neither equals the secret's other use.
 */
export const labelKeyOf = (secret: string): LabelKey => {
  let key = derived.get(secret);
  if (!key) {
    const sub = (info: string) => createHmac('sha256', secret).update(info, 'utf8').digest();
    key = { enc: sub('sendproof-label-enc-v1'), mac: sub('sendproof-label-mac-v1') };
    derived.set(secret, key);
  }
  return key;
};

const sivOf = (key: LabelKey, form: number, plaintext: Buffer): Buffer =>
  createHmac('sha256', key.mac).update(Buffer.of(form)).update(plaintext).digest().subarray(0, SIV_BYTES);

const ctr = (key: LabelKey, iv: Buffer, data: Buffer): Buffer => {
  const cipher = createCipheriv('aes-256-ctr', key.enc, iv);
  return Buffer.concat([cipher.update(data), cipher.final()]);
};

const seal = (key: LabelKey, form: number, plaintext: Buffer): string => {
  const siv = sivOf(key, form, plaintext);
  return Buffer.concat([Buffer.of(form), siv, ctr(key, siv, plaintext)]).toString('base64url');
};

/** The label for a row key (the readable dedupe key): form 1 when it fits, else form 2 (the key hash). */
export const sealLabel = (key: LabelKey, readable: string): string => {
  if (labelCarriesKey(readable)) return seal(key, FORM_KEY, Buffer.from(readable, 'utf8'));
  return seal(key, FORM_HASH, Buffer.from(hashKey(readable), 'hex'));
};

/** What an authentic label names: the key hash, and the row key when the label carried it. */
export interface OpenedLabel {
  idempotencyKey: string;
  rowKey?: string;
}

/**
 * Opens a label, or undefined when it is not one this deployment's secret made: wrong shape, unknown form,
 * or an authenticator that does not match (another deployment's label, a forged or altered one, the
 * unkeyed hash older messages carried).
 */
export const openLabel = (key: LabelKey, label: string): OpenedLabel | undefined => {
  if (!LABEL_SHAPE.test(label)) return undefined;
  const bytes = Buffer.from(label, 'base64url');
  if (bytes.length < 1 + SIV_BYTES + 1 || bytes.toString('base64url') !== label) return undefined;
  const form = bytes[0]!;
  if (form !== FORM_KEY && form !== FORM_HASH) return undefined;
  const siv = bytes.subarray(1, 1 + SIV_BYTES);
  const plaintext = ctr(key, siv, bytes.subarray(1 + SIV_BYTES));
  if (!timingSafeEqual(siv, sivOf(key, form, plaintext))) return undefined;
  if (form === FORM_HASH) {
    return plaintext.length === 32 ? { idempotencyKey: plaintext.toString('hex') } : undefined;
  }
  const readable = plaintext.toString('utf8');
  if (Buffer.from(readable, 'utf8').compare(plaintext) !== 0) return undefined;
  return { idempotencyKey: hashKey(readable), rowKey: readable };
};

/**
 * The tags a message carries: the label, and nothing readable (no tenant or purpose tag: both are
 * identifiers, and a tenant such as `clinic.example` is not even a valid SES tag value). Names and values
 * are in SES's tag alphabet, [A-Za-z0-9_-] up to 256 characters, which Resend, SMS `Context`, SendGrid and
 * a URL query also take unchanged.
 */
export const labelsFor = (label: string): Array<{ name: string; value: string }> => [
  { name: KEY_TAG, value: label },
];
