import { describe, expect, it } from 'vitest';
import { countSmsSegments } from '../../../lib/templates/smsSegments.js';

describe('countSmsSegments', () => {
  it.each([
    [160, 1],
    [161, 2],
    [306, 2],
    [307, 3],
  ])(
    'a GSM-7 text of %i characters takes %i segment(s) (160 single, 153 per concatenated part)',
    (length, segments) => {
      // Prepare
      const text = 'a'.repeat(length);

      // Act
      const count = countSmsSegments(text);

      // Assess
      expect(count).toEqual({ encoding: 'GSM-7', segments, units: length });
    },
  );

  it.each([
    [70, 1],
    [71, 2],
    [134, 2],
    [135, 3],
  ])(
    'a UCS-2 text of %i code units takes %i segment(s) (70 single, 67 per concatenated part)',
    (length, segments) => {
      // Prepare: one character outside GSM 03.38 (ã) forces the whole message into UCS-2.
      const text = `ã${'a'.repeat(length - 1)}`;

      // Act
      const count = countSmsSegments(text);

      // Assess
      expect(count).toEqual({ encoding: 'UCS-2', segments, units: length });
    },
  );

  it.each(['€', '{', '}', '[', ']', '~', '\\', '|', '^'])(
    'the extension character %s counts as two septets',
    (char) => {
      // Prepare: 158 plain characters plus one extension character is 160 septets; one more plain one is 161.
      const fits = `${'a'.repeat(158)}${char}`;
      const overflows = `${'a'.repeat(159)}${char}`;

      // Act
      const single = countSmsSegments(fits);
      const double = countSmsSegments(overflows);

      // Assess
      expect(single).toEqual({ encoding: 'GSM-7', segments: 1, units: 160 });
      expect(double).toEqual({ encoding: 'GSM-7', segments: 2, units: 161 });
    },
  );

  it('never splits an escape sequence across segments, so 306 septets can need three segments', () => {
    // Prepare: the € would straddle the first 153-septet boundary, so it moves to the second segment.
    const text = `${'a'.repeat(152)}€${'a'.repeat(152)}`;

    // Act
    const count = countSmsSegments(text);

    // Assess
    expect(count).toEqual({ encoding: 'GSM-7', segments: 3, units: 306 });
  });

  it('counts an emoji as two UTF-16 code units', () => {
    // Act
    const fits = countSmsSegments(`${'a'.repeat(68)}😀`);
    const overflows = countSmsSegments(`${'a'.repeat(69)}😀`);

    // Assess
    expect(fits).toEqual({ encoding: 'UCS-2', segments: 1, units: 70 });
    expect(overflows).toEqual({ encoding: 'UCS-2', segments: 2, units: 71 });
  });

  it('uses GSM-7 for the accented letters of the default alphabet (é ü ñ à ö) and UCS-2 for á or ê', () => {
    // Act
    const gsm = countSmsSegments('é ü ñ à ö');
    const acute = countSmsSegments('Olá');
    const circumflex = countSmsSegments('você');

    // Assess
    expect(gsm.encoding).toBe('GSM-7');
    expect(acute.encoding).toBe('UCS-2');
    expect(circumflex.encoding).toBe('UCS-2');
  });
});
