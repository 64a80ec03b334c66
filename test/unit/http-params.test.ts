/** The API's parameter errors (docs/api.md, "Body problems"): the code, and a message that says what is wrong. */
import { OtpError } from '../../functions/core/errors';
import { checkParamsSchema, sendParamsSchema, validate } from '../../functions/http/params';

const refusal = (schema: Parameters<typeof validate>[0], params: unknown) => {
  try {
    validate(schema, params, { Code: 'invalid_code' });
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

  it("answers a string that breaks the field's rule with the field's own code", () => {
    expect(refusal(sendParamsSchema, { To: '+14155550100', Code: '12' })).toEqual({
      code: 'invalid_code',
      message: 'Code is not valid.',
    });
    expect(refusal(sendParamsSchema, { To: '' })).toEqual({
      code: 'invalid_parameter',
      message: 'To is not valid.',
    });
  });
});
