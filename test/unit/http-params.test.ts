/** The API's parameter errors (docs/api.md, "Body problems"): the code, and a message that says what is wrong. */
import * as z from 'zod/mini';
import { OtpError } from '../../functions/core/errors';
import { checkParamsSchema, sendParamsSchema, validate } from '../../functions/http/params';

const refusal = (schema: Parameters<typeof validate>[0], params: unknown) => {
  try {
    // The API gives `invalid_code` to a supplied Code on send only (functions/http/api.ts).
    validate(schema, params, schema === sendParamsSchema ? { Code: 'invalid_code' } : {});
  } catch (error) {
    if (error instanceof OtpError) return { code: error.code, message: error.message };
    throw error;
  }
  return undefined;
};

describe('validate', () => {
  it('says a missing field is required', () => {
    expect(refusal(sendParamsSchema, {})).toEqual({ code: 'invalid_parameter', message: 'To is required.' });
    expect(refusal(checkParamsSchema, { Code: '123456' })).toEqual({
      code: 'invalid_parameter',
      message: 'VerificationSid is required.',
    });
  });

  it.each([
    ['a number', { To: 14155550100 }, 'To'],
    ['a list', { To: ['+14155550100'] }, 'To'],
    ['null', { To: null }, 'To'],
    ['an object', { To: '+14155550100', TemplateSid: { sid: 'HX1' } }, 'TemplateSid'],
    // An optional field sent with the wrong type is not "required".
    ['a number for an optional field', { To: '+14155550100', Code: 123456 }, 'Code'],
  ])('says a field sent as %s must be a string (invalid_parameter)', (_, params, field) => {
    expect(refusal(sendParamsSchema, params)).toEqual({
      code: 'invalid_parameter',
      message: `${field} must be a string.`,
    });
  });

  const send = (params: Record<string, unknown>) =>
    [sendParamsSchema, { To: '+14155550100', ...params }] as const;
  const check = (params: Record<string, unknown>) =>
    [checkParamsSchema, { VerificationSid: 'VE1', ...params }] as const;
  const CLIENT_CODE_RULE = 'Code must be 4 to 10 ASCII letters or digits.';
  const P = 'invalid_parameter';
  it.each([
    ['a supplied Code of 2 characters', send({ Code: '12' }), 'invalid_code', CLIENT_CODE_RULE],
    ['an empty supplied Code', send({ Code: '' }), 'invalid_code', CLIENT_CODE_RULE],
    ['an empty To', send({ To: '' }), P, 'To is empty.'],
    ['a To of 21 characters', send({ To: `+${'1'.repeat(20)}` }), P, 'To is longer than 20 characters.'],
    [
      'a 65-character TemplateSid',
      send({ TemplateSid: 'H'.repeat(65) }),
      P,
      'TemplateSid is longer than 64 characters.',
    ],
    [
      'a RiskCheck of another value',
      send({ RiskCheck: 'off' }),
      P,
      'RiskCheck must be one of: enable, disable.',
    ],
    [
      'a check Code of 11 characters',
      check({ Code: '12345678901' }),
      P,
      'Code is longer than 10 characters.',
    ],
    ['an empty check Code', check({ Code: '' }), P, 'Code is empty.'],
  ])("answers %s with the field's code and the rule it broke", (_, [schema, params], code, message) => {
    expect(refusal(schema, params)).toEqual({ code, message });
  });

  it('says how short a string is where its rule asks for more than one character', () => {
    const schema = z.object({ Label: z.string().check(z.minLength(3)) });
    expect(refusal(schema, { Label: 'ab' })).toEqual({
      code: 'invalid_parameter',
      message: 'Label is shorter than 3 characters.',
    });
  });
});
