import type * as z from 'zod/mini';

/** What a JSON value should have been, in the words of the console's answer. */
const NOUNS: Record<string, string> = {
  array: 'a list',
  string: 'a string',
  number: 'a number',
  int: 'a whole number',
  boolean: 'true or false',
  object: 'an object',
  record: 'an object',
};

/** `blockedCountries[2]`, `caps.hourlySends`: the field as the body spells it. */
function fieldName(path: readonly PropertyKey[]): string {
  return path
    .map((part, i) => (typeof part === 'number' ? `[${part}]` : `${i > 0 ? '.' : ''}${String(part)}`))
    .join('');
}

function valueAt(body: unknown, path: readonly PropertyKey[]): unknown {
  let value = body;
  for (const part of path) {
    if (typeof value !== 'object' || value === null) return undefined;
    value = (value as Record<PropertyKey, unknown>)[part];
  }
  return value;
}

const items = (n: number) => `${n} ${n === 1 ? 'item' : 'items'}`;

/**
 * The console API's answer to a body that breaks its schema: the field and what is wrong with it ("channels is
 * empty: give at least one.", "blockedCountries[0] must be a two-letter country code."), not zod's own words,
 * which say what the validator expected ("Invalid input: expected array, received undefined"). The local stack's
 * carrier rules route answers with it too.
 */
export function consoleIssueMessage(issue: z.core.$ZodIssue, body: unknown): string {
  const name = fieldName(issue.path);
  if (issue.path.length === 0) return 'The body must be a JSON object.';
  switch (issue.code) {
    case 'invalid_type':
      return valueAt(body, issue.path) === undefined
        ? `${name} is required.`
        : `${name} must be ${NOUNS[issue.expected] ?? issue.expected}.`;
    // Lists and strings are bounded in length; numbers (the local carrier rules' ms) in value.
    case 'too_small': {
      const min = Number(issue.minimum);
      if (issue.origin === 'number') return `${name} must be at least ${min}.`;
      if (issue.origin === 'array') {
        return min <= 1 ? `${name} is empty: give at least one.` : `${name} needs at least ${items(min)}.`;
      }
      return min <= 1 ? `${name} is empty.` : `${name} is shorter than ${min} characters.`;
    }
    case 'too_big': {
      const max = Number(issue.maximum);
      if (issue.origin === 'number') return `${name} must be at most ${max}.`;
      if (issue.origin === 'array') return `${name} has more than ${items(max)}.`;
      return `${name} is longer than ${max} characters.`;
    }
    case 'invalid_value':
      return `${name} must be one of: ${issue.values.map(String).join(', ')}.`;
    // A record's keys outside its enum (the local carrier rules' channels).
    case 'unrecognized_keys':
      return `${name} has no such key: ${issue.keys.join(', ')}.`;
    default:
      // A check's own words (its `error`, written to follow the name: "must be …"), else zod's, which name no field.
      return issue.message.startsWith('must ') ? `${name} ${issue.message}` : `${name} is not valid.`;
  }
}
