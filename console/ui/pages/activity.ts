/** The activity page: the service's audit trail, who changed what, newest first. */
import { api } from '../api';
import { AUDIT_MONEY_FIELDS } from '../../../functions/core/accounts/formats';
import { formatUnits } from '../../../functions/core/money';
import { h, show, table, when } from '../dom';

/** As the console API answers it (`GET /console/api/services/:sid/audit`). */
interface AuditRecord {
  id: string;
  at: string;
  actor: string;
  action: string;
  before?: unknown;
  after?: unknown;
  requestId?: string;
}

/** How many changes the page asks for. */
const RECORDS_SHOWN = 100;
/** Longer values (a whole allow-list) fold away, so that one change cannot fill the page. */
const FOLD_AFTER = 160;

/** The records keep money in the table's units (a balance of 1046700): shown in USD as everywhere else. */
const inUsd = (key: string, v: unknown) =>
  AUDIT_MONEY_FIELDS.has(key) && typeof v === 'number' ? `${formatUnits(v)} USD` : v;

function value(v: unknown): HTMLElement {
  const text = v === undefined ? '—' : JSON.stringify(v, inUsd);
  if (text.length <= FOLD_AFTER) return h('code', {}, text);
  return h(
    'details',
    {},
    h('summary', {}, h('code', {}, `${text.slice(0, FOLD_AFTER)}…`)),
    h('code', {}, text),
  );
}

function change(record: AuditRecord): HTMLElement {
  return h('span', { class: 'change' }, value(record.before), ' → ', value(record.after));
}

export async function activityPage(sid: string): Promise<void> {
  const { records } = await api<{ records: AuditRecord[] }>(
    'GET',
    `/services/${sid}/audit?limit=${RECORDS_SHOWN}`,
  );
  show(
    'Activity',
    h(
      'p',
      { class: 'muted' },
      `Every change to this service, from the console, the admin command or the stack: the latest ${RECORDS_SHOWN}, ` +
        'newest first. Only the fields that changed are shown, before → after (— where there was none).',
    ),
    h(
      'div',
      { id: 'activity' },
      table(
        ['Time', 'Actor', 'Action', 'Change'],
        records.map((r) => [
          r.requestId ? h('span', { title: `Request ${r.requestId}` }, when(r.at)) : when(r.at),
          h('code', { class: 'nowrap' }, r.actor),
          h('code', { class: 'nowrap' }, r.action),
          change(r),
        ]),
        'No changes recorded yet.',
      ),
    ),
  );
}
