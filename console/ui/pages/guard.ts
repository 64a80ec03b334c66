/**
 * The pumping guard of a service (docs/guard.md): its level, safe list and RiskCheck permission, the blocks that
 * refuse its sends now (each lifted with a click, for an hour), and its decisions with the money they saved.
 */
import { api, type Json } from '../api';
import { action, formError, h, saveCopy, show, submitted, table, when, type Copy } from '../dom';

interface BlockView {
  blocked: string;
  liftWith: string;
  reason: string;
  level: string;
  scope: string;
  until: string;
  figures: Record<string, number>;
}

interface RecentView {
  at: string;
  mode: string;
  reason: string;
  number: string;
  prefix: string;
  scope: string;
}

interface DropView {
  country: string;
  at: string;
  codesSent: number;
  codesChecked: number;
  usualConversion: number;
  ranges: 'all' | 'new';
}

interface DecisionView {
  mode: string;
  reason: string;
  prefix: string;
  sends: number;
  saved: string;
}

const figuresText = (figures: Record<string, number>) =>
  Object.entries(figures)
    .map(([name, value]) => `${name} ${value}`)
    .join(', ');

export async function guardPage(sid: string): Promise<void> {
  const g: Json = await api('GET', `/services/${sid}/guard`);
  const blocks = g.blocks as BlockView[];
  // `shadow` records what `standard` would refuse; `off` judges nothing.
  const refusing = g.guardLevel === 'standard' || g.guardLevel === 'strict';
  const decisions = g.decisions as DecisionView[];
  const recent = g.recent as RecentView[];
  const drops = g.conversionDrops as DropView[];
  const percent = (x: number) => `${Math.round(x * 100)}\u00a0%`;
  const level = h(
    'select',
    { id: 'guard-level', 'aria-label': 'Guard level' },
    (g.guardLevels as string[]).map((l) => h('option', { value: l, selected: l === g.guardLevel }, l)),
  ) as HTMLSelectElement;
  const safeList = h('input', {
    id: 'safe-list',
    'aria-label': 'Safe list',
    value: (g.safeList as string[]).join(' '),
    placeholder: '+447400123456 +4470',
    size: '48',
  }) as HTMLInputElement;
  const riskCheck = h('input', {
    type: 'checkbox',
    id: 'risk-check-opt-out',
    checked: g.riskCheckOptOut === true,
  }) as HTMLInputElement;
  // The API's refusals here are of a safe-list entry ("… is not an E.164 prefix").
  const err = formError('guard-error', [level, safeList, riskCheck], (message) =>
    /prefix|safe ?list/i.test(message) ? [safeList] : [],
  );
  // The form sends every setting from the page's copy: made on an older one, it is refused, said at the top.
  const copy: Copy = { id: 'guard-outdated', what: 'the guard settings', draw: () => guardPage(sid) };
  const lift = (prefix: string, label: string, what: string) =>
    action(label, async () => {
      await api('POST', `/services/${sid}/guard/unblock`, { prefix });
      await guardPage(sid);
      return `Lifted ${what} for an hour.`;
    });
  show(
    'Pumping guard',
    h(
      'p',
      { class: 'muted' },
      'The guard refuses sends (403 blocked_by_policy, never charged) to destinations whose codes go unchecked far more than real users leave theirs.',
    ),
    h(
      'form',
      {
        class: 'card',
        onsubmit: submitted(err, () =>
          saveCopy(copy, () =>
            api('PUT', `/services/${sid}/guard`, {
              level: level.value,
              safeList: safeList.value.split(/[\s,]+/).filter((entry) => entry !== ''),
              riskCheckOptOut: riskCheck.checked,
              guardVersion: g.guardVersion,
            }),
          ),
        ),
      },
      h(
        'p',
        { class: 'row' },
        h('label', { for: 'guard-level' }, 'Level'),
        level,
        h('span', { class: 'muted' }, 'shadow records what standard would refuse and refuses nothing'),
      ),
      h(
        'p',
        { class: 'row' },
        h('label', { for: 'safe-list' }, 'Safe list'),
        safeList,
        h(
          'span',
          { class: 'muted' },
          'your numbers or ranges (not a whole country code), never refused; separated by spaces',
        ),
      ),
      h(
        'p',
        { class: 'row' },
        riskCheck,
        h(
          'label',
          { for: 'risk-check-opt-out', class: 'inline' },
          "Let a send's RiskCheck=disable skip the guard (off: every send is judged, and the answer is the same)",
        ),
      ),
      h('p', {}, h('button', { type: 'submit' }, 'Save guard setting')),
      err,
    ),
    drops.length > 0 &&
      h(
        'section',
        { id: 'guard-drops', 'aria-label': 'Conversion drops' },
        drops.map((d) =>
          h(
            'p',
            { class: 'error', role: 'alert' },
            `Conversion drop in ${d.country} (${when(d.at)}): ${d.codesChecked} of the last hour's ${d.codesSent} codes${d.ranges === 'new' ? ' to ranges new to your users' : ''} were checked (${percent(d.codesChecked / d.codesSent)}), where its users check ${percent(d.usualConversion)}. Nothing is refused for it: a slow pumping attack, or codes not arriving. A cap for ${d.country} bounds what it costs.`,
          ),
        ),
      ),
    h('h2', {}, 'Blocks now'),
    h(
      'section',
      { id: 'guard-blocks', 'aria-label': 'Blocks now' },
      blocks.length > 0 &&
        h(
          'p',
          { role: 'alert' },
          refusing
            ? `${blocks.length} block(s) refuse sends now. `
            : `${blocks.length} block(s) in force; at ${String(g.guardLevel)} they refuse nothing. `,
          'Lifting one lets its numbers through for an hour, and the guard does not block them again meanwhile.',
        ),
      table(
        ['Refused', 'Reason', 'Level', 'Scope', 'Until', 'Figures', ''],
        blocks.map((b) => [
          h('code', {}, b.blocked),
          b.reason,
          b.level,
          b.scope,
          when(b.until),
          figuresText(b.figures),
          lift(b.liftWith, 'Lift', `the block of ${b.blocked}`),
        ]),
        'No block: nothing is refused by the guard now.',
      ),
      blocks.length > 1 && h('p', {}, lift('*', 'Lift every block', 'every block')),
    ),
    h('h2', {}, 'Decisions'),
    h(
      'section',
      { id: 'guard-decisions', 'aria-label': 'Decisions' },
      h('p', {}, `Saved by blocks: ${String(g.saved)} USD (the prices of the sends refused).`),
      table(
        ['Mode', 'Reason', 'Prefix', 'Sends', 'Saved (USD)'],
        decisions.map((d) => [d.mode, d.reason, h('code', {}, d.prefix), String(d.sends), d.saved]),
        'No decision recorded.',
      ),
      recent.length > 0 && h('h3', {}, 'Latest, newest first'),
      recent.length > 0 &&
        table(
          ['When', 'Mode', 'Reason', 'Number', 'Matched', 'Scope'],
          recent.map((d) => [
            when(d.at),
            d.mode,
            d.reason,
            h('code', {}, d.number),
            h('code', {}, d.prefix),
            d.scope,
          ]),
        ),
    ),
  );
}
