import aslValidator from 'asl-validator';
import { readFileSync } from 'node:fs';
import { ASL_PATH } from '../../local/workflow';

/** Validates the state machine file as it is deployed (placeholders replaced by Lambda ARNs). */
export function validateDefinition(): { isValid: boolean; errors: unknown[] } {
  const text = readFileSync(ASL_PATH, 'utf8').replace(
    /\$\{(\w+)\}/g,
    (_, name: string) => `arn:aws:lambda:us-east-1:123456789012:function:${name}`,
  );
  const { isValid, errors } = aslValidator(JSON.parse(text));
  return { isValid, errors };
}
