/** The delivery rules page: blocked countries and prefixes, the country allow-list and the caps per country. */
import { E164_PREFIX_PATTERN } from '../../../functions/core/accounts/formats';
import { api, type Json } from '../api';
import {
  action,
  app,
  countryOption,
  drawAgain,
  formError,
  h,
  saveCopy,
  show,
  submitted,
  table,
  when,
  type Copy,
} from '../dom';

export interface HighRisk {
  country: string;
  name: string;
  reason: string;
  sources: { publisher: string; title: string; url: string }[];
}

/**
 * Saves the rules with every other button of the page disabled until the save is done: each save sends the
 * whole lists from the page's copy of them, so a second click before the page is drawn again would send them as
 * they were, and be refused as made on an older copy.
 */
async function alone<T>(run: () => Promise<T>): Promise<T> {
  const others = [...app.querySelectorAll('button')].filter((button) => !button.disabled);
  for (const button of others) button.disabled = true;
  try {
    return await run();
  } finally {
    for (const button of others) button.disabled = false;
  }
}

/** The rules as the page shows them: made on an older copy, a change is refused and the page says so. */
const rulesCopy = (sid: string): Copy => ({
  id: 'rules-outdated',
  what: 'the rules',
  draw: () => rulesPage(sid),
});

/** Saves the rules made from the page's copy of them (`rulesVersion`: the copy's), then draws the page again. */
const saveRules = (sid: string, body: Json) =>
  alone(() => saveCopy(rulesCopy(sid), () => api('PUT', `/services/${sid}/rules`, body)));

/** The country allow-list beside the blocked lists: a deny entry wins; no list is every served country. */
function allowListSection(sid: string, r: Json): HTMLElement {
  const allowed = r.allowedCountries as string[] | null;
  const served = r.servedCountries as string[];
  const highRisk = r.highRiskCountries as HighRisk[];
  const excluded = (r.excludedHighRiskCountries as HighRisk[]).map((e) => e.country);
  const saveAllowed = (next: string[] | null) =>
    saveRules(sid, {
      blockedCountries: r.blockedCountries,
      blockedPrefixes: r.blockedPrefixes,
      allowedCountries: next,
      rulesVersion: r.rulesVersion,
    });
  const addable = served.filter((c) => allowed !== null && !allowed.includes(c));
  const add = h(
    'select',
    { id: 'allow-country', 'aria-label': 'Country to allow' },
    addable.map((c) => countryOption(c)),
  ) as HTMLSelectElement;
  return h(
    'section',
    { id: 'allow-list', 'aria-label': 'Country allow-list' },
    h('h2', {}, 'Country allow-list'),
    h(
      'p',
      { class: 'muted' },
      'Sends to a served country not on the list are refused with 403 blocked_by_policy. A blocked country or prefix is refused even when listed.',
    ),
    h(
      'p',
      { id: 'allowed-countries' },
      allowed === null
        ? 'No allow-list: every served country, high-risk ones included.'
        : allowed.length === 0
          ? 'Empty: every send is refused.'
          : `Allowed: ${allowed.join(', ')}`,
    ),
    excluded.length > 0 &&
      h('p', {}, `Left out as high risk for SMS pumping: ${excluded.join(', ')} (see below).`),
    h(
      'div',
      { class: 'row card' },
      allowed !== null &&
        addable.length > 0 &&
        h(
          'span',
          { class: 'row' },
          add,
          action('Allow country', () => saveAllowed([...allowed, add.value]), '', [add]),
        ),
      allowed !== null &&
        allowed.length > 0 &&
        h(
          'span',
          { class: 'row' },
          (() => {
            const remove = h(
              'select',
              { id: 'disallow-country', 'aria-label': 'Country to take off' },
              allowed.map((c) => countryOption(c)),
            ) as HTMLSelectElement;
            return h(
              'span',
              { class: 'row' },
              remove,
              action('Take off', () => saveAllowed(allowed.filter((c) => c !== remove.value)), 'secondary', [
                remove,
              ]),
            );
          })(),
        ),
      action('Reset to default', () => saveAllowed(r.defaultAllowedCountries as string[]), 'secondary'),
      allowed !== null && action('Allow every country', () => saveAllowed(null), 'secondary'),
    ),
    h('h3', {}, "High-risk countries (left out of a new service's list)"),
    table(
      ['Country', 'Why', 'Sources'],
      highRisk.map((e) => [
        `${e.country} ${e.name}`,
        e.reason,
        h(
          'span',
          {},
          e.sources.flatMap((source, i) => [
            i > 0 ? '; ' : '',
            h('a', { href: source.url, rel: 'noopener noreferrer', target: '_blank' }, source.publisher),
          ]),
        ),
      ]),
    ),
  );
}

const CAP_FIELDS = ['hourlySends', 'dailySends', 'hourlySpend', 'dailySpend'] as const;
const CAP_LABELS: Record<(typeof CAP_FIELDS)[number], string> = {
  hourlySends: 'Sends an hour',
  dailySends: 'Sends a day',
  hourlySpend: 'USD an hour',
  dailySpend: 'USD a day',
};

/** The owner's per-country caps, and an alert for each cap reached now. */
function capsSection(sid: string, c: Json): HTMLElement {
  const caps = c.caps as Json[];
  const reached = c.reached as Json[];
  const country = h(
    'select',
    { id: 'cap-country', 'aria-label': 'Country of the caps' },
    h('option', { value: '*' }, '* (every other country)'),
    (c.servedCountries as string[]).map((x) => countryOption(x)),
  ) as HTMLSelectElement;
  const inputs = CAP_FIELDS.map((field) => ({
    field,
    input: h('input', {
      id: `cap-${field}`,
      size: '8',
      inputmode: 'decimal',
      placeholder: 'none',
    }) as HTMLInputElement,
  }));
  // The form holds every cap of the chosen country, as a PUT sets them all: an empty field is no cap, so one
  // left empty only because the form did not show it would remove that cap.
  const fill = () => {
    const current = caps.find((x) => x.country === country.value);
    for (const { field, input } of inputs) {
      input.value = current && current[field] !== null ? String(current[field]) : '';
    }
  };
  // The API names the field it refuses ("hourlySends must be a number."): that field is the one marked.
  const err = formError('caps-error', [country, ...inputs.map(({ input }) => input)], (message) =>
    inputs.filter(({ field }) => message.includes(field)).map(({ input }) => input),
  );
  country.addEventListener('change', fill);
  fill();
  const put = (code: string, body: Json) =>
    api('PUT', `/services/${sid}/caps/${encodeURIComponent(code)}`, body).then(() =>
      drawAgain(rulesCopy(sid)),
    );
  return h(
    'section',
    { id: 'caps', 'aria-label': 'Caps' },
    h('h2', {}, 'Caps per country'),
    reached.map((x) =>
      h(
        'p',
        { class: 'error', role: 'alert' },
        `Cap reached: ${String(x.country)} ${String(x.cap).replace('_', ' ')} ${String(x.value)} of ${String(x.limit)}. Sends to ${String(x.country)} are refused until ${when(x.until)}.`,
      ),
    ),
    h(
      'p',
      { class: 'muted' },
      "Past a cap, the country's sends are refused with 403 blocked_by_policy until the end of the hour or day (UTC). Counted by the pumping guard a few seconds after each send; a guard.cap_reached webhook tells your endpoints once. The form shows the chosen country's caps: a field left empty is no cap.",
    ),
    table(
      ['Country', ...CAP_FIELDS.map((f) => CAP_LABELS[f]), ''],
      caps.map((x) => [
        String(x.country),
        ...CAP_FIELDS.map((f) => (x[f] === null ? '—' : String(x[f]))),
        action('Remove', () => put(String(x.country), {}), 'secondary'),
      ]),
      'No caps.',
    ),
    h(
      'form',
      {
        class: 'row card',
        onsubmit: submitted(err, async () => {
          const body: Json = {};
          for (const { field, input } of inputs) {
            const text = input.value.trim();
            if (text === '') continue;
            // A sends cap the page cannot read as a number goes as typed, for the API to refuse ("1,000"
            // as NaN would go out as null: no cap).
            body[field] = field.endsWith('Spend') || !Number.isFinite(Number(text)) ? text : Number(text);
          }
          await put(country.value, body);
        }),
      },
      h('label', { for: 'cap-country' }, 'Country'),
      country,
      inputs.flatMap(({ field, input }) => [h('label', { for: `cap-${field}` }, CAP_LABELS[field]), input]),
      h('button', { type: 'submit' }, 'Set caps'),
    ),
    err,
  );
}

export async function rulesPage(sid: string): Promise<void> {
  const [r, caps] = await Promise.all([
    api('GET', `/services/${sid}/rules`),
    api('GET', `/services/${sid}/caps`),
  ]);
  const countries = r.blockedCountries as string[];
  const prefixes = r.blockedPrefixes as string[];
  const save = (next: { blockedCountries: string[]; blockedPrefixes: string[] }) =>
    saveRules(sid, { ...next, rulesVersion: r.rulesVersion });
  const country = h(
    'select',
    { id: 'country' },
    (r.servedCountries as string[]).map((c) => countryOption(c)),
  ) as HTMLSelectElement;
  const prefix = h('input', {
    id: 'prefix',
    placeholder: '+4470',
    pattern: E164_PREFIX_PATTERN,
    // The browser's own refusal of a mismatch says only "match the requested format": this is the format.
    title: 'An E.164 prefix: + and 1 to 15 digits, e.g. +4474',
  }) as HTMLInputElement;
  const countryErr = formError('country-error', [country]);
  const prefixErr = formError('prefix-error', [prefix]);
  show(
    'Delivery rules',
    h(
      'p',
      { class: 'muted' },
      'Sends to a blocked country or prefix are refused with 403 blocked_by_policy.',
    ),
    h('h2', {}, 'Blocked countries'),
    table(
      ['Country', ''],
      countries.map((c) => [
        c,
        action(
          'Unblock',
          () => save({ blockedCountries: countries.filter((x) => x !== c), blockedPrefixes: prefixes }),
          'secondary',
        ),
      ]),
      'None.',
    ),
    h(
      'form',
      {
        class: 'row card',
        onsubmit: submitted(countryErr, () =>
          save({ blockedCountries: [...countries, country.value], blockedPrefixes: prefixes }),
        ),
      },
      h('label', { for: 'country' }, 'Country'),
      country,
      h('button', { type: 'submit' }, 'Block country'),
    ),
    countryErr,
    h('h2', {}, 'Blocked prefixes'),
    table(
      ['Prefix', ''],
      prefixes.map((p) => [
        p,
        action(
          'Unblock',
          () => save({ blockedCountries: countries, blockedPrefixes: prefixes.filter((x) => x !== p) }),
          'secondary',
        ),
      ]),
      'None.',
    ),
    h(
      'form',
      {
        class: 'row card',
        onsubmit: submitted(prefixErr, () =>
          save({ blockedCountries: countries, blockedPrefixes: [...prefixes, prefix.value.trim()] }),
        ),
      },
      h('label', { for: 'prefix' }, 'E.164 prefix'),
      prefix,
      h('button', { type: 'submit' }, 'Block prefix'),
    ),
    prefixErr,
    allowListSection(sid, r),
    capsSection(sid, caps),
  );
}
