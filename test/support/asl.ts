import aslValidator from 'asl-validator';
import { readFileSync } from 'node:fs';
import { ASL_PATH } from '../../local/workflow';
import { verificationKeySubstitutions } from '../../lib/delivery-definition';

/**
 * Validates the state machine file as it is deployed: function placeholders replaced by Lambda ARNs, the
 * table's name and the verification key's template by what the stack substitutes.
 */
export function validateDefinition(): { isValid: boolean; errors: unknown[] } {
  const values: Record<string, string> = { TableName: 'OtpVerify-Table', ...verificationKeySubstitutions() };
  const text = readFileSync(ASL_PATH, 'utf8').replace(
    /\$\{(\w+)\}/g,
    (_, name: string) => values[name] ?? `arn:aws:lambda:us-east-1:123456789012:function:${name}`,
  );
  const { isValid, errors } = aslValidator(JSON.parse(text));
  return { isValid, errors };
}
