/**
 * The simulator's Smithy validator (local/smithy.ts) against the constraint traits' meaning in the Smithy 2.0
 * specification (smithy.io/2.0/spec/constraint-traits.html): a small model written here, so the expectations
 * come from the spec, not from AWS's models or our adapters.
 */
import { SmithyValidator, type SmithyModel } from '../../local/smithy';

const NS = 'test.example';
const model: SmithyModel = {
  smithy: '2.0',
  shapes: {
    [`${NS}#Send`]: { type: 'operation', input: { target: `${NS}#SendInput` } },
    [`${NS}#SendInput`]: {
      type: 'structure',
      members: {
        Phone: { target: `${NS}#Phone`, traits: { 'smithy.api#required': {} } },
        Price: { target: `${NS}#Price` },
        Ttl: { target: `${NS}#Ttl` },
        Kind: { target: `${NS}#Kind` },
        Context: { target: `${NS}#Context` },
        Tags: { target: `${NS}#Tags` },
        Payload: { target: `${NS}#Payload` },
        DryRun: { target: 'smithy.api#PrimitiveBoolean' },
        Mode: { target: `${NS}#Mode` },
      },
    },
    [`${NS}#Phone`]: {
      type: 'string',
      traits: { 'smithy.api#length': { min: 1, max: 20 }, 'smithy.api#pattern': '^\\+?[1-9][0-9]{1,18}$' },
    },
    // Not anchored: a pattern matches anywhere in the value.
    [`${NS}#Price`]: {
      type: 'string',
      traits: { 'smithy.api#length': { min: 2, max: 8 }, 'smithy.api#pattern': '[0-9]\\.[0-9]' },
    },
    [`${NS}#Ttl`]: { type: 'integer', traits: { 'smithy.api#range': { min: 5, max: 259200 } } },
    [`${NS}#Kind`]: {
      type: 'string',
      traits: { 'smithy.api#enum': [{ value: 'TRANSACTIONAL' }, { value: 'PROMOTIONAL' }] },
    },
    [`${NS}#Context`]: {
      type: 'map',
      key: { target: `${NS}#ContextKey` },
      value: { target: `${NS}#ContextValue` },
      traits: { 'smithy.api#length': { max: 2 } },
    },
    [`${NS}#ContextKey`]: { type: 'string', traits: { 'smithy.api#pattern': '^\\S+$' } },
    [`${NS}#ContextValue`]: { type: 'string', traits: { 'smithy.api#length': { min: 1, max: 3 } } },
    [`${NS}#Tags`]: {
      type: 'list',
      member: { target: `${NS}#ContextValue` },
      traits: { 'smithy.api#length': { min: 1 } },
    },
    [`${NS}#Payload`]: {
      type: 'blob',
      traits: { 'smithy.api#length': { min: 1, max: 4 }, 'smithy.api#sensitive': {} },
    },
    [`${NS}#Mode`]: {
      type: 'enum',
      members: {
        FAST: { target: 'smithy.api#Unit', traits: { 'smithy.api#enumValue': 'fast' } },
        SLOW: { target: 'smithy.api#Unit' },
      },
    },
  },
};

const validator = new SmithyValidator(model);
const input = validator.inputOf(`${NS}#Send`);
const paths = (value: object) => validator.validate(input, value).map((issue) => issue.path);

test('a request within every constraint passes; unknown members are ignored', () => {
  expect(
    validator.validate(input, {
      Phone: '+447400123456',
      Price: 'x0.5',
      Ttl: 300,
      Kind: 'TRANSACTIONAL',
      Context: { ref: 'abc' },
      Tags: ['a'],
      Payload: Buffer.from('four').toString('base64'),
      DryRun: false,
      Mode: 'fast',
      Unknown: 1,
    }),
  ).toEqual([]);
});

test('a required member missing or null, in the wording AWS answers with', () => {
  expect(validator.validate(input, {})).toEqual([
    {
      path: '/Phone',
      message: "Value null at '/Phone' failed to satisfy constraint: Member must not be null",
    },
  ]);
  expect(paths({ Phone: null })).toEqual(['/Phone']);
  expect(SmithyValidator.message(validator.validate(input, { Phone: 'x', Ttl: 1 }))).toMatch(
    /^2 validation errors detected: Value 'x' at '\/Phone' failed .*pattern.*; Value 1 at '\/Ttl' failed to satisfy constraint: Member must have value greater than or equal to 5$/,
  );
});

test.each([
  ['pattern', { Phone: '+0123' }, '/Phone'],
  ['length above max', { Phone: '+1234567890123456789012' }, '/Phone'],
  ['length below min', { Phone: '+44', Price: '1' }, '/Price'],
  ['unanchored pattern that matches nowhere', { Phone: '+44', Price: '12' }, '/Price'],
  ['range below min', { Phone: '+44', Ttl: 4 }, '/Ttl'],
  ['range above max', { Phone: '+44', Ttl: 259201 }, '/Ttl'],
  ['integer type', { Phone: '+44', Ttl: 5.5 }, '/Ttl'],
  ['integer given as a string', { Phone: '+44', Ttl: '300' }, '/Ttl'],
  ['enum trait', { Phone: '+44', Kind: 'transactional' }, '/Kind'],
  ['enum shape: the enumValue, not the member name', { Phone: '+44', Mode: 'FAST' }, '/Mode'],
  ['map length', { Phone: '+44', Context: { a: '1', b: '2', c: '3' } }, '/Context'],
  ['map key pattern', { Phone: '+44', Context: { 'a b': '1' } }, '/Context/a b'],
  ['map value length', { Phone: '+44', Context: { a: 'long' } }, '/Context/a'],
  ['list length', { Phone: '+44', Tags: [] }, '/Tags'],
  ['list member', { Phone: '+44', Tags: ['ok', ''] }, '/Tags/1'],
  ['blob not base64', { Phone: '+44', Payload: 'not base64!' }, '/Payload'],
  [
    'blob length counts decoded bytes',
    { Phone: '+44', Payload: Buffer.from('fives').toString('base64') },
    '/Payload',
  ],
  ['boolean type', { Phone: '+44', DryRun: 'true' }, '/DryRun'],
  ['structure type', { Phone: '+44', Context: ['a'] }, '/Context'],
])('refuses: %s', (_name, value, path) => {
  expect(paths(value)).toEqual([path]);
});

test('the length of a string counts characters, not UTF-16 units', () => {
  // Three emoji are six UTF-16 units but three characters: within a max of 3.
  expect(paths({ Phone: '+44', Context: { a: '😀😀😀' } })).toEqual([]);
});

test("a sensitive member's value is never quoted", () => {
  const [issue] = validator.validate(input, {
    Phone: '+44',
    Payload: Buffer.from('secret').toString('base64'),
  });
  expect(issue!.message).toBe(
    "Value at '/Payload' failed to satisfy constraint: Member must have length less than or equal to 4",
  );
});
