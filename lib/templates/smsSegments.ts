/**
 * SMS segment arithmetic (3GPP TS 23.038 / 23.040). A message that fits the GSM 03.38 default alphabet
 * is sent as 7-bit septets, 160 to a single segment; anything else is sent as UCS-2, 70 UTF-16 code units
 * to a single segment. A concatenated message loses room to its User Data Header: 153 septets or 67 code
 * units per segment. Extension-table characters (€ { } [ ] ~ \ | ^ and form feed) are sent as an escape
 * plus a character, so they cost two septets and are never split across a segment boundary; neither is a
 * UTF-16 surrogate pair.
 */

export type SmsEncoding = 'GSM-7' | 'UCS-2';

export interface SmsSegmentCount {
  encoding: SmsEncoding;
  segments: number;
  /** Septets (GSM-7) or UTF-16 code units (UCS-2) the text occupies, before headers. */
  units: number;
}

export const DEFAULT_MAX_SMS_SEGMENTS = 3;

const GSM7_BASIC = new Set(
  '@£$¥èéùìòÇ\nØø\rÅåΔ_ΦΓΛΩΠΨΣΘΞÆæßÉ !"#¤%&\'()*+,-./0123456789:;<=>?¡ABCDEFGHIJKLMNOPQRSTUVWXYZÄÖÑÜ§¿abcdefghijklmnopqrstuvwxyzäöñüà',
);
const GSM7_EXTENSION = new Set('\f^{}\\[~]|€');

const SINGLE = { 'GSM-7': 160, 'UCS-2': 70 } as const;
const CONCATENATED = { 'GSM-7': 153, 'UCS-2': 67 } as const;

/** The cost of each character in the encoding the whole text will be sent in. */
const costs = (text: string): { encoding: SmsEncoding; units: number[] } => {
  const chars = [...text];
  const gsm = chars.every((c) => GSM7_BASIC.has(c) || GSM7_EXTENSION.has(c));
  if (gsm) return { encoding: 'GSM-7', units: chars.map((c) => (GSM7_EXTENSION.has(c) ? 2 : 1)) };
  // UCS-2 on the wire is UTF-16: a character outside the BMP (an emoji) takes two code units.
  return { encoding: 'UCS-2', units: chars.map((c) => c.length) };
};

export const countSmsSegments = (text: string): SmsSegmentCount => {
  const { encoding, units } = costs(text);
  const total = units.reduce((sum, u) => sum + u, 0);
  if (total <= SINGLE[encoding]) return { encoding, segments: total === 0 ? 0 : 1, units: total };
  // Fill segments greedily; a two-unit character that does not fit starts the next segment.
  const room = CONCATENATED[encoding];
  let segments = 1;
  let used = 0;
  for (const unit of units) {
    if (used + unit > room) {
      segments += 1;
      used = 0;
    }
    used += unit;
  }
  return { encoding, segments, units: total };
};
