/** The API's parameter errors (docs/api.md, "Body problems"): the code, and a message that says what is wrong. */
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

  it.each([
    [
      'a supplied Code of 2 characters',
      sendParamsSchema,
      { To: '+14155550100', Code: '12' },
      'invalid_code',
      'Code must be 4 to 10 ASCII letters or digits.',
    ],
    [
      'an empty supplied Code',
      sendParamsSchema,
      { To: '+14155550100', Code: '' },
      'invalid_code',
      'Code must be 4 to 10 ASCII letters or digits.',
    ],
    ['an empty To', sendParamsSchema, { To: '' }, 'invalid_parameter', 'To is empty.'],
    [
      'a To of 21 characters',
      sendParamsSchema,
      { To: `+${'1'.repeat(20)}` },
      'invalid_parameter',
      'To is longer than 20 characters.',
    ],
    [
      'a TemplateSid of 65 characters',
      sendParamsSchema,
      { To: '+14155550100', TemplateSid: 'H'.repeat(65) },
      'invalid_parameter',
      'TemplateSid is longer than 64 characters.',
    ],
    [
      'a RiskCheck outside its values',
      sendParamsSchema,
      { To: '+14155550100', RiskCheck: 'off' },
      'invalid_parameter',
      'RiskCheck must be one of: enable, disable.',
    ],
    [
      'a check Code of 11 characters',
      checkParamsSchema,
      { VerificationSid: 'VE1', Code: '12345678901' },
      'invalid_parameter',
      'Code is longer than 10 characters.',
    ],
    [
      'an empty check Code',
      checkParamsSchema,
      { VerificationSid: 'VE1', Code: '' },
      'invalid_parameter',
      'Code is empty.',
    ],
  ])("answers %s with the field's code and the rule it broke", (_, schema, params, code, message) => {
    expect(refusal(schema, params)).toEqual({ code, message });
  });
});
