/**
 * SMS parts as carriers bill them: GSM-7 septets or UCS-2 units, the concatenation header's share, and no
 * character split across two parts.
 */
import { smsSize, templateSmsSize } from '../../functions/core/sms-segments';

describe('smsSize', () => {
  it('GSM-7: 160 septets in one part, then parts of 153', () => {
    expect(smsSize('a'.repeat(160))).toEqual({ encoding: 'GSM-7', units: 160, segments: 1 });
    expect(smsSize('a'.repeat(161))).toEqual({ encoding: 'GSM-7', units: 161, segments: 2 });
    expect(smsSize('a'.repeat(306))).toMatchObject({ segments: 2 });
    expect(smsSize('a'.repeat(307))).toMatchObject({ segments: 3 });
  });

  it("GSM-7's extension characters take two septets and are never split across parts", () => {
    expect(smsSize('€'.repeat(80))).toEqual({ encoding: 'GSM-7', units: 160, segments: 1 });
    expect(smsSize('{}'.repeat(40) + 'a')).toMatchObject({ units: 161, segments: 2 });
    // 152 septets, then a two-septet character: it starts the second part rather than straddle the first.
    expect(smsSize('a'.repeat(152) + '[' + 'a'.repeat(152))).toMatchObject({ units: 306, segments: 3 });
    expect(smsSize('a'.repeat(151) + '[' + 'a'.repeat(153))).toMatchObject({ units: 306, segments: 2 });
  });

  it('one character outside the GSM alphabet makes the whole text UCS-2: 70 units, then parts of 67', () => {
    expect(smsSize('Your code is 123456 ✓')).toMatchObject({ encoding: 'UCS-2', segments: 1 });
    expect(smsSize('й'.repeat(70))).toEqual({ encoding: 'UCS-2', units: 70, segments: 1 });
    expect(smsSize('й'.repeat(71))).toEqual({ encoding: 'UCS-2', units: 71, segments: 2 });
    expect(smsSize('й'.repeat(134))).toMatchObject({ segments: 2 });
    expect(smsSize('й'.repeat(135))).toMatchObject({ segments: 3 });
  });

  it('an emoji is two UTF-16 units and its surrogate pair is never split', () => {
    expect(smsSize('😀'.repeat(35))).toEqual({ encoding: 'UCS-2', units: 70, segments: 1 });
    // 66 units, then a pair that would straddle the first part's end: it starts the second part.
    expect(smsSize('й'.repeat(66) + '😀' + 'й'.repeat(66))).toMatchObject({ units: 134, segments: 3 });
    expect(smsSize('й'.repeat(65) + '😀' + 'й'.repeat(67))).toMatchObject({ units: 134, segments: 2 });
  });

  it('a 1,000-character template of emoji and Cyrillic: fifteen parts, not one', () => {
    const template = 'Ваш код {code} 🙂 ' + 'ё'.repeat(972);
    expect(template).toHaveLength(990);
    expect(templateSmsSize(template)).toEqual({ encoding: 'UCS-2', units: 994, segments: 15 });
  });

  it('a template is measured with the longest code a send can carry (10 characters)', () => {
    const body = 'a'.repeat(150) + '{code}';
    expect(smsSize(body.replace('{code}', '123456')).segments).toBe(1);
    expect(templateSmsSize(body)).toMatchObject({ units: 160, segments: 1 });
    expect(templateSmsSize('a' + body)).toMatchObject({ units: 161, segments: 2 });
  });
});
