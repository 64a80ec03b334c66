/**
 * docs/local.md and the README's walk-through agree with the local stack: the carrier rules table names every
 * behaviour the rules route takes, and the API key they show has the format `npm start` prints.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { API_KEY_BODY_LENGTH, API_KEY_TAG_LENGTH, formatApiKey } from '../../functions/core/api-key-format';
import { carrierRuleSchema } from '../../local/carrier';
import { REPO_ROOT } from '../../scripts/check-links';

const read = (file: string) => readFileSync(join(REPO_ROOT, file), 'utf8');
const localPage = read('docs/local.md');
const readme = read('README.md');

it('the carrier rules row of docs/local.md names every channel behaviour', () => {
  const row = localPage.split('\n').find((line) => line.startsWith('| `POST /_local/carrier/rules`'))!;
  const behaviours = carrierRuleSchema.shape.channels.valueType.options.map((option) =>
    'shape' in option ? Object.keys(option.shape)[0]! : option.value,
  );
  expect(behaviours.filter((name) => !row.includes(`\`${name}\``))).toEqual([]);
});

it('the API key shown in docs/local.md and the README has the prefix of an issued key', () => {
  const issued = formatApiKey('A'.repeat(API_KEY_BODY_LENGTH), { tag: () => 'B'.repeat(API_KEY_TAG_LENGTH) });
  const prefix = issued.slice(0, issued.indexOf('_') + 1);
  const shown = [/^ {2}API key {6}(\S+)$/m.exec(localPage)?.[1], /\bK=(\S+)$/m.exec(readme)?.[1]];
  expect(shown.map((key) => key?.slice(0, prefix.length))).toEqual([prefix, prefix]);
});
