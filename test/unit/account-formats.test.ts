/**
 * The account formats (functions/core/accounts/formats.ts): what each parser takes and refuses, and that each rule
 * is written once — the console, the admin command and the console page read it from there.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import {
  DEFAULT_TEMPLATE_SMS_PARTS,
  KEY_ID_LENGTH,
  MAX_SERVICE_NAME_LENGTH,
  MAX_TEMPLATE_LENGTH,
  MAX_TEMPLATE_SMS_PARTS,
  MAX_TOP_UP_UNITS,
  parseE164Prefix,
  parseKeyId,
  parseServiceName,
  parseSid,
  parseTemplateBody,
  parseTemplateSmsPartLimit,
  parseTopUp,
  parseUsdAmount,
  templateSize,
} from '../../functions/core/accounts/formats';

const ROOT = join(__dirname, '..', '..');
const SOURCE_DIRS = ['functions', 'scripts', 'console', 'local', 'lib', 'bin'];

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return name === 'node_modules' ? [] : sources(path);
    return path.endsWith('.ts') ? [path] : [];
  });
}

const files = SOURCE_DIRS.flatMap((dir) => sources(join(ROOT, dir))).map((path) => ({
  path: relative(ROOT, path),
  text: readFileSync(path, 'utf8'),
}));

/** The files whose text matches, other than the one that may hold the rule. */
const elsewhere = (pattern: RegExp, home: string) =>
  files.filter((file) => file.path !== home && pattern.test(file.text)).map((file) => file.path);

describe('each format rule is defined once', () => {
  test.each([
    ['a SID pattern', /\[0-9a-f\]\{32\}/, 'functions/core/sids.ts'],
    ['the E.164 prefix pattern', /\{0,14\}/, 'functions/core/accounts/formats.ts'],
    [
      'a key id length or pattern',
      /KEY_ID_LENGTH =|\^\[0-9a-f\]\{(8,64|12)\}\$/,
      'functions/core/accounts/formats.ts',
    ],
    ['the {code} placeholder check', /includes\('\{code\}'\)/, 'functions/core/accounts/formats.ts'],
    [
      'a service name or template length',
      /MAX_(SERVICE_)?NAME_LENGTH =|MAX_TEMPLATE_LENGTH =/,
      'functions/core/accounts/formats.ts',
    ],
    ['a literal name or template limit in a schema', /maxLength\((100|1000)\)/, ''],
  ])('%s', (_what, pattern, home) => {
    expect(elsewhere(pattern, home)).toEqual([]);
  });
});

describe('parsers', () => {
  test('SIDs: two letters and 32 lowercase hex characters', () => {
    expect(parseSid('VA', `VA${'a'.repeat(32)}`)).toEqual({ ok: true, value: `VA${'a'.repeat(32)}` });
    expect(parseSid('VA', `VA${'A'.repeat(32)}`).ok).toBe(false);
    expect(parseSid('HX', `VA${'a'.repeat(32)}`).ok).toBe(false);
  });

  test(`a key id is exactly ${KEY_ID_LENGTH} hex characters, as the store names keys`, () => {
    expect(parseKeyId('0123456789ab').ok).toBe(true);
    expect(parseKeyId('0123456789a').ok).toBe(false);
    expect(parseKeyId('0123456789abc').ok).toBe(false);
  });

  test('an E.164 prefix: + then 1 to 15 digits, never starting with 0', () => {
    expect(parseE164Prefix('+4470').ok).toBe(true);
    expect(parseE164Prefix('+0447').ok).toBe(false);
    expect(parseE164Prefix(`+1${'2'.repeat(15)}`).ok).toBe(false);
  });

  test('a service name is trimmed, 1 to the limit', () => {
    expect(parseServiceName('  Acme ')).toEqual({ ok: true, value: 'Acme' });
    expect(parseServiceName('  ').ok).toBe(false);
    expect(parseServiceName('x'.repeat(MAX_SERVICE_NAME_LENGTH + 1)).ok).toBe(false);
  });

  test('a name or template with control characters or half a character is refused; line breaks and emoji are not', () => {
    for (const name of ['Ac\u0000me', 'Acme\u001b[31m', 'Acme\u009b31m', 'Acme \ud83d']) {
      expect([name, parseServiceName(name).ok]).toEqual([name, false]);
    }
    for (const body of [
      '{code}\u0000',
      'Code {code} \udc00',
      'Code \u007f{code}',
      'Code {code}\u009b31m',
      'Code\u0085{code}',
    ]) {
      expect([body, parseTemplateBody(body)]).toEqual([
        body,
        { ok: false, problem: expect.stringContaining('Unicode') },
      ]);
    }
    expect(parseServiceName('Acme 🚀').ok).toBe(true);
    expect(parseTemplateBody('Your code:\n{code}\t🔐', 2).ok).toBe(true);
  });

  test('a template needs {code} and stays under the length', () => {
    expect(parseTemplateBody('no placeholder').ok).toBe(false);
    expect(parseTemplateBody(`{code}${'a'.repeat(MAX_TEMPLATE_LENGTH)}`, MAX_TEMPLATE_SMS_PARTS).ok).toBe(
      false,
    );
  });

  test('a template over the SMS part limit is refused with its part count', () => {
    // 150 GSM-7 characters with a 10-character code: 154 septets, one part; 160 more make three parts.
    const one = `Your code is {code}. ${'a'.repeat(130)}`;
    expect(templateSize(one)).toMatchObject({ encoding: 'GSM-7', segments: 1, overLimit: false });
    const three = `${one}${'b'.repeat(160)}`;
    const refused = parseTemplateBody(three);
    expect(refused).toEqual({ ok: false, problem: expect.stringContaining('takes 3 parts') });
    expect(refused).toEqual({
      ok: false,
      problem: expect.stringContaining(`allows ${DEFAULT_TEMPLATE_SMS_PARTS}`),
    });
    expect(parseTemplateBody(three, 3).ok).toBe(true);
    // One emoji makes it UCS-2: 70 units a part, so a short text is two parts.
    const emoji = `Your code is {code} 🔐 ${'c'.repeat(50)}`;
    expect(templateSize(emoji)).toMatchObject({ encoding: 'UCS-2', segments: 2 });
    expect(parseTemplateBody(emoji, 1)).toEqual({ ok: false, problem: expect.stringContaining('UCS-2') });
  });

  test('the SMS part limit an operator sets is 1 to the most allowed', () => {
    expect(parseTemplateSmsPartLimit('3')).toEqual({ ok: true, value: 3 });
    expect(parseTemplateSmsPartLimit('0').ok).toBe(false);
    expect(parseTemplateSmsPartLimit(String(MAX_TEMPLATE_SMS_PARTS + 1)).ok).toBe(false);
    expect(parseTemplateSmsPartLimit('2.5').ok).toBe(false);
  });

  test('a USD amount: four decimals at most; one that is too precise or too large is told so', () => {
    expect(parseUsdAmount('0.0600', 'Price')).toEqual({ ok: true, value: 600 });
    expect(parseUsdAmount('25', 'Price')).toEqual({ ok: true, value: 250_000 });
    expect(parseUsdAmount('1.23456', 'Price')).toEqual({
      ok: false,
      problem: 'Price "1.23456" has more than 4 decimals: amounts are in units of 0.0001 USD',
    });
    expect(parseUsdAmount('99999999999', 'Top-up amount')).toEqual({
      ok: false,
      problem: 'Top-up amount "99999999999" is larger than any amount held: at most 999999999.9999 USD',
    });
    for (const text of ['abc', '-5', '1e3', '0x10', '', '1.'])
      expect(parseUsdAmount(text, 'Price')).toEqual({
        ok: false,
        problem: expect.stringContaining('is not a USD amount'),
      });
  });

  test('a top-up is more than 0 and at most the limit', () => {
    expect(parseTopUp(1).ok).toBe(true);
    expect(parseTopUp(0).ok).toBe(false);
    expect(parseTopUp(MAX_TOP_UP_UNITS + 1)).toEqual({
      ok: false,
      problem: expect.stringContaining('1,000,000'),
    });
  });
});
