/**
 * The console's DOM helpers and the page frame. Every text a user or the table supplied goes in through
 * `textContent` (the `h` helper), never as HTML.
 */
import { HttpError } from './api';

export type Child = Node | string | number | null | undefined | false;
type Attrs = Record<string, string | boolean | ((event: Event) => void) | undefined>;

/** An element with attributes, listeners and children; strings become text nodes. */
export function h(tag: string, attrs: Attrs = {}, ...children: (Child | Child[])[]): HTMLElement {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === undefined || value === false) continue;
    if (typeof value === 'function') el.addEventListener(name.replace(/^on/, ''), value);
    else if (value === true) el.setAttribute(name, '');
    else el.setAttribute(name, value);
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    el.append(typeof child === 'object' ? child : document.createTextNode(String(child)));
  }
  return el;
}

/** The page's main region: each page replaces its content. */
export const app = document.getElementById('app')!;

export function show(title: string, ...content: Child[]): void {
  document.title = `${title} · OTP console`;
  app.replaceChildren(
    h('h1', {}, title),
    ...content
      .filter((c): c is Node | string => !!c || c === 0)
      .map((c) => (typeof c === 'object' ? c : String(c))),
  );
  app.focus();
}

const announcer = document.getElementById('announce')!;
let announcing: ReturnType<typeof setTimeout> | undefined;

/**
 * Says `text` to a screen reader, in a status region outside the page's main region: what an action did, when
 * the page it changed is drawn again (the button and the line beside it gone, the focus on the page). Emptied
 * first, so that the same words are said again; with no text, only emptied (a new page says nothing of the last).
 */
export function announce(text = ''): void {
  clearTimeout(announcing);
  announcer.textContent = '';
  if (text) announcing = setTimeout(() => (announcer.textContent = text), 100);
}

export function copyButton(text: string, label = 'Copy'): HTMLElement {
  const button = h('button', { type: 'button', class: 'secondary' }, label);
  button.addEventListener('click', () => {
    void navigator.clipboard.writeText(text).then(
      () => {
        button.textContent = 'Copied';
        announce('Copied.');
        setTimeout(() => (button.textContent = label), 1500);
      },
      () => (button.textContent = 'Copy failed'),
    );
  });
  return button;
}

/**
 * Puts a table's scroller in the tab order while, and only while, its table is wider than it: a keyboard user can
 * then scroll it, and a table that fits costs no extra Tab.
 */
const scrollers = new ResizeObserver((entries) => {
  for (const { target } of entries) {
    if (target.scrollWidth > target.clientWidth) target.setAttribute('tabindex', '0');
    else target.removeAttribute('tabindex');
  }
});

/**
 * A table in its own horizontal scroller: on a phone a wide one scrolls there, not the page. The scroller is a
 * named region, in the tab order when it scrolls (`scrollers`), so a keyboard user can scroll it too; `label`
 * names it (else its columns do). An empty header is a column of buttons: "Actions" to a screen reader.
 */
export function table(
  headers: string[],
  rows: Child[][],
  empty = 'Nothing yet.',
  label?: string,
): HTMLElement {
  if (rows.length === 0) return h('p', { class: 'muted' }, empty);
  const grid = h(
    'table',
    {},
    h(
      'thead',
      {},
      h(
        'tr',
        {},
        // A column of buttons has no visible heading; a screen reader moving along a row still names it.
        headers.map((x) =>
          h('th', { scope: 'col' }, x === '' ? h('span', { class: 'visually-hidden' }, 'Actions') : x),
        ),
      ),
    ),
    h(
      'tbody',
      {},
      rows.map((row) =>
        h(
          'tr',
          {},
          row.map((cell) => h('td', {}, cell)),
        ),
      ),
    ),
  );
  const name = label ?? `Table: ${headers.filter((x) => x !== '').join(', ')}`;
  const scroller = h('div', { class: 'table-scroll', role: 'region', 'aria-label': name }, grid);
  scrollers.observe(scroller);
  return scroller;
}

export const badge = (text: string) => h('span', { class: `badge ${text}` }, text);
export const when = (iso: unknown) =>
  typeof iso === 'string' ? iso.replace('T', ' ').replace(/\.\d+Z$/, 'Z') : '—';

/**
 * Whether an error is the server's refusal of what the fields hold (400, 409, 422), so that they are marked
 * `aria-invalid`. Too many requests (429), a failing server or gateway (5xx), no answer, or a change made on an
 * older copy of the data (409 `conflict`) say nothing about the input: the same input may pass when sent again.
 */
const refusesInput = (error: unknown): boolean =>
  error instanceof HttpError && [400, 409, 422].includes(error.status) && error.code !== 'conflict';

let actionOutputs = 0;

/**
 * A button that runs `run`; its error, or the note it returns, is said beside it (the note announced instead
 * when `run` drew the page again). `fields` (the inputs it reads) are tied to what it says, and marked
 * `aria-invalid` while the server refuses what they hold (`refusesInput`).
 */
export function action(
  label: string,
  run: () => Promise<string | void>,
  cls = '',
  fields: HTMLElement[] = [],
): HTMLElement {
  const out = h('span', { role: 'status', id: `action-out-${++actionOutputs}` });
  for (const field of fields) {
    const describedBy = field.getAttribute('aria-describedby');
    field.setAttribute('aria-describedby', describedBy ? `${describedBy} ${out.id}` : out.id);
  }
  const say = (text: string, className: string, refused = false) => {
    out.textContent = text;
    out.className = className;
    for (const field of fields) {
      if (refused) field.setAttribute('aria-invalid', 'true');
      else field.removeAttribute('aria-invalid');
    }
  };
  const button = h('button', { type: 'button', class: cls }, label) as HTMLButtonElement;
  button.addEventListener('click', () => {
    const refocus = keepFocus([button]);
    button.disabled = true;
    say('', '');
    run()
      .then((note) => {
        if (!note) return;
        if (button.isConnected) say(note, 'muted');
        else announce(note);
      })
      .catch((error: unknown) =>
        say(error instanceof Error ? error.message : String(error), 'error', refusesInput(error)),
      )
      .finally(() => {
        button.disabled = false;
        refocus();
      });
  });
  return h('span', {}, button, ' ', out);
}

/**
 * A form's submit handler: one request at a time, its submit buttons disabled meanwhile (a double click or a second
 * Enter would otherwise add a second webhook endpoint, whose secret is never shown, or a second service with its
 * opening balance), and the error shown in `err`.
 */
export function submitted(err: HTMLElement, run: () => Promise<void>): (event: Event) => void {
  let busy = false;
  return (event) => {
    event.preventDefault();
    if (busy) return;
    busy = true;
    const buttons = [...(event.currentTarget as HTMLFormElement).querySelectorAll('button')];
    const refocus = keepFocus(buttons);
    for (const button of buttons) button.disabled = true;
    sayError(err, '');
    run()
      .catch((error: unknown) =>
        sayError(
          err,
          error instanceof Error ? error.message : String(error),
          // Not about the input: said, no field marked.
          refusesInput(error) ? undefined : () => false,
        ),
      )
      .finally(() => {
        busy = false;
        for (const button of buttons) button.disabled = false;
        refocus();
      });
  };
}

/**
 * Disabling the focused button (while its request runs) drops the focus to the page's body: a screen reader then
 * loses its place, and the refusal said beside the button is read with nothing focused. Gives back a function
 * that, once the buttons are enabled again, puts the focus back on the one that had it, unless the page was drawn
 * again (the button is gone; `show` focused the page) or the user moved the focus elsewhere meanwhile.
 */
function keepFocus(buttons: HTMLButtonElement[]): () => void {
  const had = buttons.find((button) => button === document.activeElement);
  return () => {
    if (!had?.isConnected) return;
    const now = document.activeElement;
    if (now === null || now === document.body) had.focus();
  };
}

/**
 * What a page shows and sends back whole with its version (the rules, the guard settings, the channels), so that a
 * change made on an older copy is refused (409 `conflict`) rather than undo the changes made since.
 */
export interface Copy {
  /** The id of the line that says the page is out of date. */
  id: string;
  /** What the page shows, as its button names it: "the rules". */
  what: string;
  /** Draws the page again from what the server holds now. */
  draw: () => Promise<void>;
}

/**
 * Says at the top of the page that what it shows is not what the server holds, with a button that reads it again.
 * The focus goes to the button: the way on, for a keyboard, is there.
 */
function outdated(copy: Copy, message: string): void {
  const reload = h('button', { type: 'button' }, `Reload ${copy.what}`);
  reload.addEventListener('click', () => {
    void copy
      .draw()
      .catch((error: unknown) =>
        outdated(copy, `${capitalized(copy.what)} could not be read: ${errorText(error)}`),
      );
  });
  const banner = h(
    'div',
    { id: copy.id, class: 'card', role: 'alert' },
    h('p', { class: 'error' }, message),
    reload,
  );
  document.getElementById(copy.id)?.remove();
  app.querySelector('h1')?.after(banner);
  reload.focus();
}

/**
 * Makes a change on the page's copy (`save` sends its version), then draws the page again. Refused as made on an
 * older copy (another tab, another member, the admin command changed it since), nothing was changed: the whole
 * page is out of date, so it says so at its top with a way to reload. When the page cannot be read again, what it
 * shows is from before the save: it says that too, rather than show it as what the server holds.
 */
export async function saveCopy(copy: Copy, save: () => Promise<unknown>): Promise<void> {
  try {
    await save();
  } catch (error) {
    if (error instanceof HttpError && error.code === 'conflict') return outdated(copy, error.message);
    throw error;
  }
  await drawAgain(copy);
}

/** The page drawn again after a save, the save announced; when it cannot be read, said at its top (`saveCopy`). */
export const drawAgain = (copy: Copy): Promise<void> =>
  copy
    .draw()
    .then(() => announce(`Saved ${copy.what}.`))
    .catch((error: unknown) =>
      outdated(
        copy,
        `Saved, but ${copy.what} could not be read again: the page shows them as they were before the save. ${errorText(error)}`,
      ),
    );

const errorText = (error: unknown) => (error instanceof Error ? error.message : String(error));
const capitalized = (text: string) => text.charAt(0).toUpperCase() + text.slice(1);

/** The fields each error line is about, and which of them a message concerns. */
const errorFields = new WeakMap<
  HTMLElement,
  { fields: HTMLElement[]; pick: (message: string) => HTMLElement[] }
>();

/**
 * A form's error line, tied to its fields: each names the line in `aria-describedby`, and is marked `aria-invalid`
 * while the line holds an error about it: the server's refusal of the input (set by `submitted`, `refusesInput`;
 * `pick` narrows it to the fields it names, else it concerns them all) or the browser's own check of a field (its
 * `title` says the format).
 */
export function formError(
  id: string,
  fields: HTMLElement[],
  pick: (message: string) => HTMLElement[] = () => fields,
): HTMLElement {
  const err = h('p', { id, role: 'status', class: 'error' });
  errorFields.set(err, { fields, pick });
  for (const field of fields) {
    const describedBy = field.getAttribute('aria-describedby');
    field.setAttribute('aria-describedby', describedBy ? `${describedBy} ${id}` : id);
    field.addEventListener('invalid', () => {
      const input = field as HTMLInputElement;
      const format = input.validity.patternMismatch && input.title ? ` ${input.title}.` : '';
      sayError(err, `${input.validationMessage}${format}`, (f) => !(f as HTMLInputElement).validity.valid);
    });
  }
  return err;
}

/** Says `message` in a form's error line (none: clears it) and marks the fields it concerns. */
function sayError(err: HTMLElement, message: string, concerns?: (field: HTMLElement) => boolean): void {
  err.textContent = message;
  const tied = errorFields.get(err);
  if (!tied) return;
  const picked = message === '' ? [] : tied.pick(message);
  for (const field of tied.fields) {
    if (concerns ? concerns(field) : picked.includes(field)) field.setAttribute('aria-invalid', 'true');
    else field.removeAttribute('aria-invalid');
  }
}

/**
 * The error page, with a way on: `retry` runs the failed page again, `back` leads somewhere that works (left out
 * when it is the page that failed: a link to the current address does nothing).
 */
export function showError(
  error: unknown,
  way: { retry: () => unknown; back?: { href: string; label: string } },
): void {
  if (error instanceof HttpError && error.status === 401) return;
  const back = way.back && way.back.href !== location.hash ? way.back : undefined;
  show(
    'Something went wrong',
    h('p', { class: 'error', role: 'alert' }, error instanceof Error ? error.message : String(error)),
    h(
      'p',
      { class: 'row' },
      h('button', { type: 'button', onclick: () => void way.retry() }, 'Try again'),
      back && h('a', { href: back.href }, back.label),
    ),
  );
}

/** The browser's names of regions, in the page's language: a select shows "GB United Kingdom", not "GB". */
const regionNames = new Intl.DisplayNames([document.documentElement.lang || 'en'], {
  type: 'region',
  fallback: 'none',
});

/** A country's option: its code as the value, and the code and name shown. */
export function countryOption(code: string): HTMLElement {
  const name = regionNames.of(code);
  return h('option', { value: code }, name ? `${code} ${name}` : code);
}
