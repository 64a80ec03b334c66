/**
 * `providers check`: the post-deploy check. It invokes the deliver function with a check event, so that every
 * call runs under that function's role and settings (functions/wiring/provider-check.ts), and prints pass or
 * fail per channel and country with the provider's own error. Nothing is sent to anyone.
 */
import {
  PROVIDER_CHECK_KIND,
  countriesOf,
  type CheckRow,
  type ProviderCheckReport,
} from '../../../functions/core/provider-check';
import { parsePhone } from '../../../functions/core/phone';
import { CHANNELS, ROUTES } from '../../../functions/core/routing';
import { getExampleNumber, type CountryCode } from 'libphonenumber-js/max';
import examples from 'libphonenumber-js/mobile/examples';
import { table } from '../format';
import { AdminError, EXIT, UsageError, command, type Command, type CommandContext } from '../framework';

/** Invocations at most: each checks what fits in the function's time, and hands back the countries left. */
const MAX_INVOCATIONS = 20;

/**
 * A country's default dry-run destination: its example mobile number in libphonenumber's metadata (Google's
 * libphonenumber, through libphonenumber-js), e.g. +918123456789 for India. A dry run reaches no one; an SMS
 * sandbox refuses every number not verified in it, so there the operator passes `--to` with a verified one.
 */
function defaultCheckNumber(country: string): string | undefined {
  try {
    return getExampleNumber(country as CountryCode, examples)?.number;
  } catch {
    return undefined;
  }
}

/** The number of each served country the dry runs go to: `--to`'s, else the default. */
function readNumbers(values: string[] | undefined): Record<string, string> {
  const given: Record<string, string> = {};
  for (const value of (values ?? []).flatMap((text) => text.split(','))) {
    const phone = parsePhone(value);
    if (!phone) throw new UsageError(`--to "${value}" is not a valid number in E.164 (+CC…)`);
    if (given[phone.country]) throw new UsageError(`--to names two numbers of ${phone.country}`);
    given[phone.country] = phone.e164;
  }
  const to: Record<string, string> = {};
  for (const country of Object.keys(ROUTES)) {
    const number = given[country] ?? defaultCheckNumber(country);
    if (number) to[country] = number;
  }
  return { ...to, ...given };
}

const isReport = (value: unknown): value is ProviderCheckReport =>
  typeof value === 'object' &&
  value !== null &&
  (value as { kind?: unknown }).kind === PROVIDER_CHECK_KIND &&
  Array.isArray((value as { rows?: unknown }).rows);

/** Runs the check until every country is done, in as many invocations as the function's time needs. */
async function check(context: CommandContext, to: Record<string, string>): Promise<ProviderCheckReport> {
  const invoke = context.invokeDeliver;
  if (!invoke)
    throw new AdminError(
      'providers check invokes the deliver function: pass --stack NAME [--region R] for a deployed stack, or ' +
        'run it with `npm start` running (no --table)',
    );
  let report: ProviderCheckReport | undefined;
  let countries: string[] | undefined;
  for (let invocation = 0; invocation < MAX_INVOCATIONS; invocation++) {
    const answer = await invoke({ kind: PROVIDER_CHECK_KIND, to, ...(countries && { countries }) });
    if (!isReport(answer))
      throw new AdminError('The deliver function did not answer a check report: is it up to date?');
    report = report
      ? { ...report, rows: [...report.rows, ...answer.rows], remaining: answer.remaining }
      : answer;
    // No progress at all: the function has no time for even one country.
    if (answer.remaining.length === 0 || answer.remaining.length === countries?.length) break;
    countries = answer.remaining;
  }
  return report!;
}

const CHANNEL_ORDER: readonly string[] = CHANNELS;

/** A channel-wide row's countries: all those the channel serves, a few, or all but a few. */
function countriesText(row: CheckRow): string {
  if (row.country !== '*') return row.country;
  const all = countriesOf(row.channel);
  const others = all.filter((country) => !row.countries.includes(country));
  if (others.length === 0) return 'all';
  return row.countries.length <= others.length ? row.countries.join(',') : `all but ${others.join(',')}`;
}

function reportText(report: ProviderCheckReport, target: string): string {
  // By channel, its channel-wide checks first, then by country; rows of one check keep the function's order.
  const rows = [...report.rows].sort(
    (a, b) =>
      CHANNEL_ORDER.indexOf(a.channel) - CHANNEL_ORDER.indexOf(b.channel) ||
      Number(b.country === '*') - Number(a.country === '*') ||
      (a.country === '*' ? a.provider.localeCompare(b.provider) : a.country.localeCompare(b.country)),
  );
  const failed = rows.filter((row) => !row.ok);
  const cell = (row: CheckRow) => [
    row.channel,
    countriesText(row),
    row.provider,
    row.check,
    row.ok ? 'pass' : 'FAIL',
    row.detail,
  ];
  return [
    `Providers check of ${target}, run by its deliver function under its own role. Nothing was sent.`,
    '',
    rows.length > 0
      ? table(['CHANNEL', 'COUNTRY', 'PROVIDER', 'CHECK', 'RESULT', 'DETAIL'], rows.map(cell))
      : 'No channel is on a real provider: nothing to check.',
    ...(report.notChecked.length > 0
      ? [
          '',
          `Not checked: ${report.notChecked.map(({ channel, provider }) => `${channel} (${provider})`).join(', ')}`,
        ]
      : []),
    ...(report.remaining.length > 0
      ? ['', `Not reached (the function ran out of time): ${report.remaining.join(', ')}`]
      : []),
    ...(Object.keys(report.cannotCheck).length > 0
      ? [
          '',
          'What no check can tell without sending a message:',
          ...Object.entries(report.cannotCheck).flatMap(([provider, items]) =>
            items.map((item) => `  ${provider}: ${item}`),
          ),
        ]
      : []),
    '',
    failed.length === 0
      ? `${rows.length} checks passed.`
      : `${failed.length} of ${rows.length} checks failed: those channels fall through to the next in those countries.`,
  ].join('\n');
}

const providersCheck = command({
  words: ['providers', 'check'],
  args: [],
  optionsUsage: '[--stack NAME] [--to +E164 ...]',
  options: ['stack', 'to'],
  summary: 'Check the deployment’s providers from its deliver function, sending nothing',
  details: [
    '',
    'Invokes the deliver function with a check event (the operator needs lambda:InvokeFunction on it, and',
    'lambda:ListFunctions and lambda:GetFunction to find it by --stack). Per channel and country: a DryRun',
    'SendTextMessage for SMS and RCS on aws-sms (to the --to number of that country, or its example mobile',
    'number), GetLinkedWhatsAppBusinessAccountPhoneNumber for aws-whatsapp, and for Vonage the private key,',
    'application id, signature secret and senders, without calling Vonage. India’s SMS also needs its DLT',
    'template (otp:awsSmsRegisteredTemplates). Exit code 1 when a check fails.',
    'Without --stack: the running `npm start` (with --providers, the provider simulator).',
  ],
  examples: [
    'providers check --stack OtpVerify --region eu-west-1',
    'providers check --to +918123456789 --to +14155550100',
  ],
  parse: (_args, values) => ({ to: readNumbers(values.to) }),
  run: async (context, { to }) => {
    const report = await check(context, to);
    const failed = report.rows.some((row) => !row.ok) || report.remaining.length > 0;
    return {
      json: report,
      text: reportText(report, context.targetDescription),
      ...(failed && { exitCode: EXIT.failed }),
    };
  },
});

export const providersCommands: readonly Command[] = [providersCheck];
