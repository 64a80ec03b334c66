/**
 * The console in a real browser: Debian's Chromium driven by puppeteer-core, against the local stack as
 * `npm start` builds it (seeded demo service, the real clock, the local sign-in), on the run's DynamoDB Local.
 * Each page is exercised through its controls, and what it changes is checked against the public API; a
 * screenshot of each page is taken, into docs/console/ (shown in docs/console.md) with `npm run screenshots`
 * (`OTP_SCREENSHOTS=docs`), else into a temporary directory, so that `npm test` leaves the working tree as it
 * found it. A Content-Security-Policy violation or an error in the page fails the test.
 */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import puppeteer, { type Browser, type HTTPRequest, type HTTPResponse, type Page } from 'puppeteer-core';
import { hashApiKey, systemClock } from '../../functions/adapters/crypto';
import { dynamoAccounts } from '../../functions/wiring/accounts';
import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { keys } from '../../functions/adapters/dynamodb/keys';
import { CHANNELS } from '../../functions/core/routing';
import { jsonLogger } from '../../functions/adapters/logger';
import { LocalConsoleAuth } from '../../local/console-auth';
import { DEMO_CONSOLE_USER, seedDemoAccount, type DemoAccount } from '../../local/seed';
import { startLocalGuard } from '../../local/guard';
import { startLocalStack, type LocalStack } from '../../local/stack';
import { eventually } from '../support/harness';
import { freshTable, type TestTable } from '../support/table';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const SHOTS =
  process.env.OTP_SCREENSHOTS === 'docs'
    ? join(__dirname, '..', '..', 'docs', 'console')
    : mkdtempSync(join(tmpdir(), 'console-shots-'));

let stack: LocalStack;
let demo: DemoAccount;
let browser: Browser;
let page: Page;
let downloads: string;
let table: TestTable;
const problems: string[] = [];
let counter = 0;
const freshMobile = () => `+447400${String(3_100_000 + ++counter).slice(1)}`;

jest.setTimeout(60_000);

const MASTER_KEY = 'browser-test-master-key-0123456789abcdef';

beforeAll(async () => {
  table = await freshTable('browser');
  demo = await seedDemoAccount(table.documents, table.name, MASTER_KEY);
  stack = await startLocalStack({
    dynamoEndpoint: table.endpoint,
    tableName: table.name,
    masterKey: MASTER_KEY,
    // A robot clicks faster than a person: these tests make several console requests a second, one user's
    // minute well past the per-user limit a person never meets.
    env: { ...process.env, OTP_CHANNEL_WAIT_SECONDS: '1', OTP_CONSOLE_REQUESTS_PER_MINUTE: '600' },
    logger: jsonLogger(() => undefined),
    sweepIntervalMs: 0,
  });
  mkdirSync(SHOTS, { recursive: true });
  downloads = mkdtempSync(join(tmpdir(), 'console-downloads-'));
  browser = await puppeteer.launch({
    executablePath: CHROMIUM,
    headless: true,
    // Root in CI containers: Chromium's sandbox needs user namespaces it may not have there.
    args: ['--no-sandbox', '--disable-dev-shm-usage'],
  });
  await browser
    .defaultBrowserContext()
    .overridePermissions(stack.url, ['clipboard-read', 'clipboard-write', 'clipboard-sanitized-write']);
  page = await browser.newPage();
  page.setDefaultTimeout(10_000);
  // The clipboard answers a focused page only.
  await page.bringToFront();
  await page.setViewport({ width: 1200, height: 780 });
  page.on('console', (message) => {
    if (message.type() === 'error') problems.push(message.text());
  });
  page.on('pageerror', (error) => problems.push(String(error)));
  page.on('dialog', (dialog) => void dialog.accept());
  const cdp = await page.createCDPSession();
  await cdp.send('Browser.setDownloadBehavior', { behavior: 'allow', downloadPath: downloads });
});

afterAll(async () => {
  await browser?.close();
  await stack?.close();
  table?.close();
  if (downloads) rmSync(downloads, { recursive: true, force: true });
  if (process.env.OTP_SCREENSHOTS !== 'docs') rmSync(SHOTS, { recursive: true, force: true });
});

afterEach(() => {
  // Errors the API answered on purpose are not page problems; anything else (CSP, exceptions) is.
  expect(problems.filter((text) => !/status of 4\d\d/.test(text))).toEqual([]);
});

/** The account store on the run's table, to see what the console wrote. */
const stackAccounts = () => dynamoAccounts(table.documents, table.name);
const shot = (name: string) => page.screenshot({ path: join(SHOTS, `${name}.png`) as `${string}.png` });
const text = (selector: string) => page.$eval(selector, (el) => el.textContent ?? '');
const go = async (hash: string, ready: string) => {
  // The page is emptied first, so that `ready` is looked for in the new page, not in the one before it.
  await page.evaluate(() => document.getElementById('app')?.replaceChildren()).catch(() => undefined);
  const url = `${stack.url}/console#${hash}`;
  if (page.url() === url) await page.reload();
  else await page.goto(url);
  await page.waitForSelector(ready).catch(async (error: unknown) => {
    // Say what the page shows instead.
    throw new Error(`${String(error)}; the page shows: ${await page.$eval('body', (el) => el.textContent)}`);
  });
};
const send = (body: Record<string, string>, apiKey = demo.apiKey) =>
  fetch(`${stack.url}/v2/Services/${demo.serviceSid}/Verifications`, {
    method: 'POST',
    headers: { 'x-api-key': apiKey, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(body),
  });
/** Puts a long text in the template form at once (typing it key by key is slow), as typing would. */
const setTemplateText = (value: string) =>
  page.$eval(
    '#template-body',
    (el, v) => {
      (el as HTMLTextAreaElement).value = v;
      el.dispatchEvent(new Event('input'));
    },
    value,
  );
/** The text of each row of the table under `selector`, in the page's order. */
const rowTexts = (selector: string) =>
  page.$$eval(`${selector} tbody tr`, (rows) => rows.map((row) => row.textContent ?? ''));
/** Clicks the button labelled `label` inside the table row that contains `rowText`. */
const clickInRow = (rowText: string, label: string) =>
  page.evaluate(
    (row, name) => {
      const tr = [...document.querySelectorAll('tr')].find((candidate) =>
        candidate.textContent?.includes(row),
      );
      const button = [...(tr?.querySelectorAll('button') ?? [])].find((b) => b.textContent === name);
      if (!button) throw new Error(`No ${name} button in the row of ${row}`);
      button.click();
    },
    rowText,
    label,
  );
/** Waits until a table row holding `rowText` also shows `shown`. */
const rowShows = (rowText: string, shown: string) =>
  page.waitForFunction(
    (row, text) =>
      [...document.querySelectorAll('tr')].some(
        (tr) => tr.textContent?.includes(row) && tr.textContent.includes(text),
      ),
    {},
    rowText,
    shown,
  );
/** A block in the demo service's guard state for `country`, for an hour, as the guard's consumer writes one. */
async function putGuardState(country: string, state: Record<string, unknown>): Promise<void> {
  await table.documents.send(
    new PutCommand({
      TableName: table.name,
      Item: {
        ...keys.guardCountry(demo.serviceSid, country),
        type: 'guard_state',
        state: JSON.stringify({ blocks: [], established: [], lifted: {}, ...state }),
      },
    }),
  );
}
const putGuardBlock = (
  country: string,
  block: { prefix: string; reason: string; figures: Record<string, number> },
) =>
  putGuardState(country, {
    blocks: [{ ...block, level: 'standard', since: Date.now(), until: Date.now() + 3_600_000 }],
  });
/**
 * Resolves once the page has made no request for `ms`, counting only those it makes from now on
 * (`waitForNetworkIdle` also counts a held request the page gave up, which may never be seen to end).
 */
function quietFor(ms: number): Promise<void> {
  const pending = new Set<HTTPRequest>();
  return new Promise((resolve) => {
    let timer = setTimeout(done, ms);
    function done() {
      if (pending.size > 0) return;
      page.off('request', start).off('requestfinished', end).off('requestfailed', end);
      resolve();
    }
    const start = (request: HTTPRequest) => {
      pending.add(request);
      clearTimeout(timer);
    };
    const end = (request: HTTPRequest) => {
      if (!pending.delete(request) || pending.size > 0) return;
      clearTimeout(timer);
      timer = setTimeout(done, ms);
    };
    page.on('request', start).on('requestfinished', end).on('requestfailed', end);
  });
}

/**
 * Holds the browser's requests that `match` picks, to make their answers late; every other request goes on.
 * `release` lets them go to the server (or answers them with `answer`) and waits until the page has had the
 * answers (or dropped the requests) and time to draw them.
 */
async function holdRequests(match: (request: HTTPRequest) => boolean) {
  const held: { request: HTTPRequest; over: Promise<void> }[] = [];
  let arrived = (): void => undefined;
  const first = new Promise<void>((resolve) => (arrived = resolve));
  /** Finished, or failed (the page may abort a request it no longer needs). */
  const over = (request: HTTPRequest) =>
    new Promise<void>((resolve) => {
      const done = (finished: HTTPRequest) => {
        if (finished !== request) return;
        page.off('requestfinished', done).off('requestfailed', done);
        resolve();
      };
      page.on('requestfinished', done).on('requestfailed', done);
    });
  const onRequest = (request: HTTPRequest) => {
    if (match(request)) {
      held.push({ request, over: over(request) });
      arrived();
    } else void request.continue();
  };
  await page.setRequestInterception(true);
  page.on('request', onRequest);
  return {
    arrived: first,
    release: async (answer?: { status: number; contentType: string; body: string }) => {
      page.off('request', onRequest);
      const quiet = quietFor(300);
      for (const { request } of held) {
        if (request.failure()) continue;
        void (answer ? request.respond(answer) : request.continue()).catch(() => undefined);
      }
      await Promise.all(held.map((x) => x.over));
      await page.setRequestInterception(false);
      await quiet;
    },
  };
}
const clickButton = (label: string) =>
  page.evaluate((name) => {
    const button = [...document.querySelectorAll('button')].find((b) => b.textContent === name);
    if (!button) throw new Error(`No ${name} button`);
    button.click();
  }, label);

test('sign in on loopback and copy the Service SID from the settings page', async () => {
  await page.goto(`${stack.url}/console`);
  await page.waitForSelector('#email');
  await shot('sign-in');
  await page.$eval('#email', (el) => ((el as HTMLInputElement).value = ''));
  await page.type('#email', DEMO_CONSOLE_USER);
  await page.click('button[type=submit]');
  await page.waitForSelector('#service-sid');
  expect(await text('#service-sid')).toBe(demo.serviceSid);
  expect(await text('#who')).toBe(DEMO_CONSOLE_USER);
  await clickButton('Copy SID');
  await page.waitForFunction(() => /Copied|Copy failed/.test(document.body.textContent ?? ''));
  expect(await page.evaluate(() => document.body.textContent?.includes('Copied'))).toBe(true);
  expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(demo.serviceSid);
  // The token lives in this tab's sessionStorage; no cookie was set.
  expect(await page.cookies()).toEqual([]);
  expect(await page.evaluate(() => sessionStorage.length)).toBe(1);
  await shot('settings');
  // On a phone: the navigation goes above the page, and nothing is wider than the screen.
  await page.setViewport({ width: 390, height: 844 });
  expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
  await shot('phone-settings');
  await page.setViewport({ width: 1200, height: 780 });
  // A page name the console does not know shows Settings, and the navigation marks Settings.
  await go(`/s/${demo.serviceSid}/no-such-page`, '#service-sid');
  expect(await page.$eval('nav a[aria-current=page]', (el) => el.getAttribute('href'))).toBe(
    `#/s/${demo.serviceSid}/settings`,
  );
});

test('the error page offers a way on, and the picker claims no service the page is not showing', async () => {
  // Another member's service (or none): refused, with a link back to the member's own service.
  const other = `VA${'0'.repeat(31)}1`;
  await go(`/s/${other}/settings`, 'main [role=alert]');
  expect(await text('main [role=alert]')).toBe('Not a service of yours.');
  const picked = await page.$eval('#service-select', (el) => {
    const select = el as HTMLSelectElement;
    return { value: select.value, text: select.selectedOptions[0]?.textContent ?? '' };
  });
  expect(picked.value).not.toBe(demo.serviceSid);
  expect(picked.text).not.toContain(demo.serviceSid.slice(0, 8));
  expect(await page.$('nav a[aria-current=page]')).toBeNull();
  await page.click(`main a[href="#/s/${demo.serviceSid}/settings"]`);
  await page.waitForSelector('#service-sid');
  expect(await page.$eval('#service-select', (el) => (el as HTMLSelectElement).value)).toBe(demo.serviceSid);

  // A failure that may pass: "Try again" runs the page again, without a reload.
  let failing = true;
  const fail = (request: HTTPRequest) => {
    if (failing && request.url().endsWith(`/console/api/services/${demo.serviceSid}/keys`)) {
      void request.respond({ status: 502, contentType: 'text/html', body: '<html>Bad Gateway</html>' });
    } else void request.continue();
  };
  await page.setRequestInterception(true);
  page.on('request', fail);
  try {
    await page.click(`nav a[href="#/s/${demo.serviceSid}/keys"]`);
    await page.waitForSelector('main [role=alert]');
    expect(await text('main [role=alert]')).toContain('HTTP 502');
    failing = false;
    await clickButton('Try again');
    await page.waitForSelector('#key-count');
  } finally {
    page.off('request', fail);
    await page.setRequestInterception(false);
  }
  problems.splice(0, problems.length, ...problems.filter((problem) => !problem.includes('status of 502')));
});

test('the service picker moves by arrow keys without leaving the page; Enter or a pick from the list opens it', async () => {
  const by = { actor: 'cli:browser-test' };
  const second = await stackAccounts().createService(by, { name: 'Second', balance: 0, channels: ['sms'] });
  await stackAccounts().addMember(by, second.sid, DEMO_CONSOLE_USER, DEMO_CONSOLE_USER);
  const hash = () => page.evaluate(() => location.hash);
  const picked = () => page.$eval('#service-select', (el) => (el as HTMLSelectElement).value);
  /** The arrow that moves the closed picker from the demo service to the second. */
  const towardSecond = async () =>
    (
      await page.$$eval('#service-select option', (options) =>
        options.map((o) => (o as HTMLOptionElement).value),
      )
    ).indexOf(second.sid) > 0
      ? 'ArrowDown'
      : 'ArrowUp';
  try {
    await go(`/s/${demo.serviceSid}/keys`, '#service-select');
    const arrow = await towardSecond();
    // An arrow moves the choice, not the page (a page per key press would carry a keyboard user past the service).
    await page.focus('#service-select');
    await page.keyboard.press(arrow);
    expect(await picked()).toBe(second.sid);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(await hash()).toBe(`#/s/${demo.serviceSid}/keys`);
    // Leaving without Enter puts the picker back on the page's service.
    await page.keyboard.press('Tab');
    expect(await picked()).toBe(demo.serviceSid);
    expect(await hash()).toBe(`#/s/${demo.serviceSid}/keys`);
    // Enter opens the service chosen, on the same page.
    await page.focus('#service-select');
    await page.keyboard.press(arrow);
    await page.keyboard.press('Enter');
    await page.waitForFunction((want) => location.hash === want, {}, `#/s/${second.sid}/keys`);
    // A pick from the open list (a change with no arrow key before it) opens the service at once.
    await page.waitForSelector('#service-select');
    await page.select('#service-select', demo.serviceSid);
    await page.waitForFunction((want) => location.hash === want, {}, `#/s/${demo.serviceSid}/keys`);
  } finally {
    await stackAccounts().removeMember(by, second.sid, DEMO_CONSOLE_USER);
    await go(`/s/${demo.serviceSid}/settings`, '#service-sid');
  }
});

test("a page's late answer, or its late error, never draws over the page clicked after it", async () => {
  const keysAnswer = (request: HTTPRequest) =>
    request.method() === 'GET' && request.url().endsWith(`/console/api/services/${demo.serviceSid}/keys`);
  /** The page on the screen: its title, and whether it is the keys page or shows an error. */
  const shown = () =>
    page.evaluate(() => ({
      title: document.title,
      keys: document.querySelector('#key-count') !== null,
      error: document.querySelector('main [role=alert]')?.textContent ?? null,
    }));
  await go(`/s/${demo.serviceSid}/settings`, '#service-sid');

  // Keys clicked, its answer slow; Templates clicked and drawn; then the keys answer comes.
  let keys = await holdRequests(keysAnswer);
  await page.click(`nav a[href="#/s/${demo.serviceSid}/keys"]`);
  await keys.arrived;
  await page.click(`nav a[href="#/s/${demo.serviceSid}/templates"]`);
  await page.waitForSelector('#template-body');
  await keys.release();
  expect(await shown()).toEqual({ title: 'Templates · OTP console', keys: false, error: null });
  expect(await page.$('#template-body')).not.toBeNull();

  // The same with an error for an answer: no error page over the page clicked after it.
  await go(`/s/${demo.serviceSid}/settings`, '#service-sid');
  keys = await holdRequests(keysAnswer);
  await page.click(`nav a[href="#/s/${demo.serviceSid}/keys"]`);
  await keys.arrived;
  await page.click(`nav a[href="#/s/${demo.serviceSid}/activity"]`);
  await page.waitForSelector('#activity');
  await keys.release({ status: 502, contentType: 'text/html', body: '<html>Bad Gateway</html>' });
  expect(await shown()).toEqual({ title: 'Activity · OTP console', keys: false, error: null });
  problems.splice(0, problems.length, ...problems.filter((problem) => !problem.includes('status of 502')));

  // Back to the keys page (slow), then forward again before it answers: the page forward stays.
  await go(`/s/${demo.serviceSid}/keys`, '#key-count');
  await go(`/s/${demo.serviceSid}/activity`, '#activity');
  keys = await holdRequests(keysAnswer);
  await page.$eval('#activity', (el) => el.setAttribute('data-before', ''));
  await page.evaluate(() => history.back());
  await keys.arrived;
  await page.evaluate(() => history.forward());
  await page.waitForSelector('#activity:not([data-before])');
  await keys.release();
  expect(await shown()).toEqual({ title: 'Activity · OTP console', keys: false, error: null });
  expect(page.url()).toMatch(/\/activity$/);

  // A save whose answer comes after the member went on: the saved page is not drawn again over the new one.
  await go(`/s/${demo.serviceSid}/settings`, '#ch-sms');
  const saved = await holdRequests((request) => request.method() === 'PUT');
  await clickButton('Save channels');
  await saved.arrived;
  await page.click(`nav a[href="#/s/${demo.serviceSid}/templates"]`);
  await page.waitForSelector('#template-body');
  await saved.release();
  expect(await shown()).toEqual({ title: 'Templates · OTP console', keys: false, error: null });
});

test('loading the console asks for nothing the server lacks (the favicon included)', async () => {
  // A browser that has never been here: Chromium asks for a favicon once per run.
  const other = await puppeteer.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-dev-shm-usage'],
  });
  const fresh = await other.newPage();
  const failed: string[] = [];
  fresh.on('response', (response: HTTPResponse) => {
    if (response.status() >= 400) failed.push(`${response.status()} ${response.url()}`);
  });
  await fresh.goto(`${stack.url}/console`);
  await fresh.waitForSelector('#email');
  await fresh.waitForNetworkIdle({ idleTime: 300 });
  await other.close();
  expect(failed).toEqual([]);
});

test('the keyboard focus shows at 3:1 against what surrounds it, on the white page and the dark header', async () => {
  await go(`/s/${demo.serviceSid}/settings`, '#ch-sms');
  /** The best contrast of the focused control's rings (outline, box-shadow) against the colour behind it. */
  const focusContrast = () =>
    page.evaluate(() => {
      const rgb = (text: string) => (/rgba?\(([^)]+)\)/.exec(text)?.[1] ?? '').split(',').map(Number);
      const luminance = ([r, g, b]: number[]) =>
        [r!, g!, b!]
          .map((v) => v / 255)
          .map((v) => (v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4))
          .reduce((sum, v, i) => sum + v * [0.2126, 0.7152, 0.0722][i]!, 0);
      const ratio = (a: number[], b: number[]) => {
        const [hi, lo] = [luminance(a), luminance(b)].sort((x, y) => y - x);
        return (hi! + 0.05) / (lo! + 0.05);
      };
      const focused = document.activeElement!;
      let behind = [255, 255, 255];
      for (let el = focused.parentElement; el; el = el.parentElement) {
        const colour = rgb(getComputedStyle(el).backgroundColor);
        if (colour.length === 3 || (colour[3] ?? 0) > 0) {
          behind = colour.slice(0, 3);
          break;
        }
      }
      const style = getComputedStyle(focused);
      const rings = [
        ...(style.outlineStyle !== 'none' ? [style.outlineColor] : []),
        ...(style.boxShadow.match(/rgba?\([^)]+\)/g) ?? []),
      ];
      return Math.max(0, ...rings.map((ring) => ratio(rgb(ring), behind)));
    });
  await page.focus('#ch-sms');
  await page.keyboard.press('Tab');
  expect(await page.evaluate(() => document.activeElement?.id)).toBe('ch-whatsapp');
  expect(await focusContrast()).toBeGreaterThanOrEqual(3);
  await page.focus('#service-select');
  await page.keyboard.down('Shift');
  await page.keyboard.press('Tab');
  await page.keyboard.up('Shift');
  expect(await page.evaluate(() => document.activeElement?.id)).toBe('sign-out');
  expect(await focusContrast()).toBeGreaterThanOrEqual(3);
});

test('every text field and select shows its edge at 3:1 against its own fill and what surrounds it', async () => {
  /** Each visible field's weakest contrast of its border against its fill and against the colour behind it. */
  const edges = () =>
    page.evaluate(() => {
      const rgb = (text: string) => (/rgba?\(([^)]+)\)/.exec(text)?.[1] ?? '').split(',').map(Number);
      const opaque = (colour: number[]) => colour.length === 3 || (colour[3] ?? 0) > 0;
      const luminance = ([r, g, b]: number[]) =>
        [r!, g!, b!]
          .map((v) => v / 255)
          .map((v) => (v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4))
          .reduce((sum, v, i) => sum + v * [0.2126, 0.7152, 0.0722][i]!, 0);
      const ratio = (a: number[], b: number[]) => {
        const [hi, lo] = [luminance(a), luminance(b)].sort((x, y) => y - x);
        return (hi! + 0.05) / (lo! + 0.05);
      };
      const fields = [...document.querySelectorAll('input:not([type=checkbox]), select, textarea')].filter(
        (el) => el.getClientRects().length > 0,
      );
      return fields.map((field) => {
        let behind = [255, 255, 255];
        for (let el = field.parentElement; el; el = el.parentElement) {
          const colour = rgb(getComputedStyle(el).backgroundColor);
          if (opaque(colour)) {
            behind = colour.slice(0, 3);
            break;
          }
        }
        const style = getComputedStyle(field);
        const fill = opaque(rgb(style.backgroundColor)) ? rgb(style.backgroundColor).slice(0, 3) : behind;
        const border = rgb(style.borderTopColor).slice(0, 3);
        return {
          field: field.id || field.getAttribute('aria-label'),
          contrast: Math.min(ratio(border, fill), ratio(border, behind)),
        };
      });
    });
  for (const [hash, ready] of [
    [`/s/${demo.serviceSid}/rules`, '#cap-hourlySends'],
    [`/s/${demo.serviceSid}/verifications`, '#search'],
    [`/s/${demo.serviceSid}/templates`, '#template-body'],
  ] as const) {
    await go(hash, ready);
    const found = await edges();
    expect(found.length).toBeGreaterThan(1);
    for (const { field, contrast } of found)
      expect({ field, contrast: Math.min(3, contrast) }).toEqual({ field, contrast: 3 });
  }
});

test('issue a key, send with it over the public API, revoke it and see the API refuse it', async () => {
  await go(`/s/${demo.serviceSid}/keys`, 'table');
  const activeBefore = Number((await text('#key-count')).split(' ')[0]);
  await clickButton('Issue a key');
  await page.waitForSelector('#new-api-key');
  const apiKey = await text('#new-api-key');
  expect(apiKey).toMatch(/^otpk2_/);
  expect(await text('#key-count')).toBe(
    `${activeBefore + 1} active of at most 10: each key has its own requests-per-minute limit; an operator sets how many keys.`,
  );
  await shot('api-keys');
  expect((await send({ To: freshMobile() }, apiKey)).status).toBe(201);

  // Shown once: after a reload only its id is on the page.
  await page.reload();
  await page.waitForSelector('table');
  expect(await page.content()).not.toContain(apiKey);
  const keyId = hashApiKey(apiKey).slice(0, 12);
  await clickInRow(keyId, 'Revoke');
  await rowShows(keyId, 'revoked');
  const refused = await send({ To: freshMobile() }, apiKey);
  expect(refused.status).toBe(401);
});

test('add a template (its text escaped on the page) and send with it', async () => {
  await go(`/s/${demo.serviceSid}/templates`, '#template-body');
  const body = 'Hi <img src=x onerror=alert(1)> {code}';
  await page.type('#template-body', body);
  await page.click('form button[type=submit]');
  await page.waitForFunction((t) => document.querySelector('table')?.textContent?.includes(t), {}, body);
  // Shown as text: no element was made from it.
  expect(await page.$$('main img')).toHaveLength(0);
  const templateSid = await page.evaluate((t) => {
    const tr = [...document.querySelectorAll('tr')].find((row) => row.textContent?.includes(t));
    return tr?.querySelector('code')?.textContent ?? '';
  }, body);
  expect(templateSid).toMatch(/^HX/);
  await shot('templates');
  const to = freshMobile();
  expect((await send({ To: to, TemplateSid: templateSid })).status).toBe(201);
  const message = await eventually(async () => stack.carrier.messagesTo(to)[0]);
  expect(message.body).toMatch(/^Hi <img src=x onerror=alert\(1\)> \d{6}$/);
});

test('the template form shows the SMS size as the text is typed, and the server refusing a save', async () => {
  await go(`/s/${demo.serviceSid}/templates`, '#template-size');
  // Measured with the longest code a send can carry (10 characters) in place of {code}.
  await page.type('#template-body', 'Your code is {code}. Never share it with anyone, not even with us.');
  expect(await text('#template-size')).toMatch(/GSM-7, 70 characters, 1 part\b/);
  // One emoji: the whole text goes UCS-2, the emoji is two UTF-16 units, and 73 units take two parts.
  await page.type('#template-body', ' 🔒');
  expect(await text('#template-size')).toMatch(/UCS-2, 73 UTF-16 units, 2 parts\b/);
  await page.click('#template-body', { count: 3 });
  await page.keyboard.press('Backspace');
  await page.type('#template-body', 'No code here');
  expect(await text('#template-size')).toMatch(/GSM-7, 12 characters, 1 part\b/);
  // Refused by the server: its own message is shown, and nothing is added.
  await page.click('form button[type=submit]');
  await page.waitForFunction(() => document.querySelector('form [role=status]')?.textContent !== '');
  expect(await text('form [role=status]')).toBe(
    'A template needs the {code} placeholder, e.g. "Your Acme code is {code}"',
  );
  expect(await text('main table')).not.toContain('No code here');
  // Over the service's part limit (2 by default): the counter says so, and the server refuses it.
  await setTemplateText(`Your code is {code}. ${'Keep it to yourself. '.repeat(14)}`.trimEnd());
  expect(await text('#template-size')).toMatch(
    /GSM-7, 318 characters, 3 parts .*: over this service's limit of 2 parts/,
  );
  // The status still holds the last refusal until the form is sent again (then it is emptied): wait for the new one.
  const previous = await text('form [role=status]');
  await page.click('form button[type=submit]');
  await page.waitForFunction(
    (before) => !['', before].includes(document.querySelector('form [role=status]')?.textContent ?? ''),
    {},
    previous,
  );
  expect(await text('form [role=status]')).toMatch(/takes 3 parts .*this service allows 2$/);
  expect(await text('main table')).not.toContain('Keep it to yourself');
});

test("open a verification's timeline after a fallback", async () => {
  const to = freshMobile();
  stack.carrier.setRule({ prefix: to, channels: { sna: 'silent', viber: { deliver: 100 } } });
  const sent = await send({ To: to });
  const { sid } = (await sent.json()) as { sid: string };
  await eventually(async () => {
    const fetched = await fetch(`${stack.url}/v2/Services/${demo.serviceSid}/Verifications/${sid}`, {
      headers: { 'x-api-key': demo.apiKey },
    });
    return ((await fetched.json()) as { delivery_status: string }).delivery_status === 'DELIVERED'
      ? true
      : undefined;
  }, 15_000);

  // One wrong guess, then the code the carrier carried: the timeline gives the outcome, never a code.
  const code = /(\d{6})/.exec(stack.carrier.messagesTo(to).find((m) => m.channel === 'viber')!.body)![1]!;
  for (const guess of [code === '000000' ? '111111' : '000000', code]) {
    await fetch(`${stack.url}/v2/Services/${demo.serviceSid}/VerificationCheck`, {
      method: 'POST',
      headers: { 'x-api-key': demo.apiKey, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ VerificationSid: sid, Code: guess }),
    });
  }

  await go(`/s/${demo.serviceSid}/verifications`, '#search');
  await page.waitForFunction((s) => document.querySelector('tbody tr')?.textContent?.includes(s), {}, sid);
  await shot('verifications');
  // A search the API cannot take: its answer under the search box, the box and the list still there.
  await page.type('#search', 'hello');
  await page.click('form[role=search] button');
  await page.waitForFunction(() => document.querySelector('#search-error')?.textContent !== '');
  expect(await text('#search-error')).toBe('Search by a VE… SID or a phone number (digits).');
  expect(await text('tbody')).toContain(sid);
  await page.$eval('#search', (el) => ((el as HTMLInputElement).value = ''));
  await page.type('#search', to);
  await page.click('form[role=search] button');
  await page.waitForFunction(
    (s) =>
      document.querySelectorAll('tbody tr').length === 1 &&
      document.querySelector('tbody')?.textContent?.includes(s),
    {},
    sid,
  );
  await page.click(`a[href$="/verification/${sid}"]`);
  await page.waitForSelector('#timeline');
  const timeline = await text('#timeline');
  expect(timeline).toContain('sna: accepted by the provider');
  expect(timeline).toContain('No receipt for sna within 1 s: switched to viber');
  expect(timeline).toContain('Delivery receipt: delivered over viber');
  expect(timeline).toContain('sna: no delivery receipt');
  expect(timeline).toContain('2 checks: 1 wrong, then right');
  expect(timeline).toContain('Code VERIFIED');
  expect(timeline).not.toContain(code);
  // The switch came after the 1 s wait, on the real clock.
  const offsets = await page.$$eval('#timeline li.switch .t', (els) =>
    els.map((el) => parseFloat(el.textContent!.slice(1))),
  );
  expect(offsets[0]).toBeGreaterThanOrEqual(1);
  await shot('timeline');
});

test('balance and charges, and the charges CSV downloaded', async () => {
  await go(`/s/${demo.serviceSid}/charges`, '#balance');
  expect(await text('#balance')).toMatch(/^\d+\.\d{4} USD$/);
  await shot('charges');
  await clickButton('Download CSV');
  const file = await eventually(async () => readdirSync(downloads).find((name) => name.endsWith('.csv')));
  const csv = readFileSync(join(downloads, file), 'utf8').trim().split('\r\n');
  expect(csv[0]).toBe('date,verification_sid,amount_usd,country');
  // One line per accepted send so far (three: the new key's, the template's, the fallback's), each to GB.
  expect(csv.slice(1)).toHaveLength(3);
  for (const line of csv.slice(1)) expect(line).toMatch(/^\S+Z,VE[0-9a-f]{32},0\.\d{4},GB$/);
});

test('conversion charts for 24 hours and 7 days', async () => {
  await go(`/s/${demo.serviceSid}/conversion`, '.bars');
  expect(await page.$$('section[aria-label="Last 24 hours"] .bar')).not.toHaveLength(0);
  const label = await page.$eval('section[aria-label="Last 24 hours"] .bar', (el) =>
    el.getAttribute('aria-label'),
  );
  expect(label).toMatch(/sent \d+, delivered \d+, verified \d+/);
  await shot('conversion');
});

test('add a webhook endpoint: its secret shown once', async () => {
  await go(`/s/${demo.serviceSid}/webhooks`, '#webhook-url');
  await page.type('#webhook-url', `${stack.url}/_local/webhooks/receiver`);
  await page.click('form button[type=submit]');
  await page.waitForSelector('#webhook-secret');
  expect(await text('#webhook-secret')).toMatch(/^whsec_/);
  // The recent deliveries come from the table: none yet for an endpoint just added.
  expect(await text('#webhook-deliveries')).toBe('No deliveries in the last 7 days.');
  await shot('webhooks');
});

test('a double click on a form sends it once: one webhook endpoint (its secret shown), one template', async () => {
  const count = (path: string, list: string) =>
    page.evaluate(
      async (p, l) => {
        const token = sessionStorage.getItem('otp-console-token') ?? '';
        const response = await fetch(`/console/api${p}`, { headers: { authorization: `Bearer ${token}` } });
        return ((await response.json()) as Record<string, unknown[]>)[l]!.length;
      },
      path,
      list,
    );
  const doubleClick = (label: string) =>
    page.evaluate((name) => {
      const button = [...document.querySelectorAll('form button')].find((b) => b.textContent === name);
      if (!button) throw new Error(`No ${name} button`);
      (button as HTMLButtonElement).click();
      (button as HTMLButtonElement).click();
    }, label);
  await go(`/s/${demo.serviceSid}/webhooks`, '#webhook-url');
  const endpoints = await count(`/services/${demo.serviceSid}/webhooks`, 'endpoints');
  await page.type('#webhook-url', `${stack.url}/_local/webhooks/receiver`);
  await doubleClick('Add endpoint');
  await page.waitForSelector('#webhook-secret');
  await page.waitForNetworkIdle({ idleTime: 300 });
  expect(await count(`/services/${demo.serviceSid}/webhooks`, 'endpoints')).toBe(endpoints + 1);
  await go(`/s/${demo.serviceSid}/templates`, '#template-body');
  const templates = await count(`/services/${demo.serviceSid}/templates`, 'templates');
  await page.type('#template-body', 'Once only: {code}');
  await doubleClick('Add template');
  await rowShows('Once only: {code}', 'Make default');
  await page.waitForNetworkIdle({ idleTime: 300 });
  expect(await count(`/services/${demo.serviceSid}/templates`, 'templates')).toBe(templates + 1);
});

test('on a phone, every control is on the screen or in a table that scrolls by keyboard, and fits its card', async () => {
  await page.setViewport({ width: 390, height: 844 });
  try {
    const pages: [string, string][] = [
      ['webhooks', '#webhook-url'],
      ['guard', '#safe-list'],
      ['rules', '#prefix'],
      ['templates', '#template-body'],
      ['verifications', '#search'],
      ['keys', '#key-count'],
      ['activity', '#activity'],
    ];
    for (const [name, ready] of pages) {
      await go(`/s/${demo.serviceSid}/${name}`, ready);
      // A table's scroller is a tab stop exactly when its table is wider than it.
      await page.waitForFunction(() =>
        [...document.querySelectorAll<HTMLElement>('.table-scroll')].every(
          (el) => el.scrollWidth > el.clientWidth === el.tabIndex >= 0,
        ),
      );
      const misplaced = await page.evaluate(() => {
        /** An ancestor that scrolls sideways and that a keyboard reaches: a named region in the tab order. */
        const keyboardScroller = (el: Element) => {
          for (let up = el.parentElement; up && up !== document.body; up = up.parentElement) {
            if (
              /auto|scroll/.test(getComputedStyle(up).overflowX) &&
              up.tabIndex >= 0 &&
              up.getAttribute('role') === 'region' &&
              up.hasAttribute('aria-label')
            ) {
              return true;
            }
          }
          return false;
        };
        const found: string[] = [];
        for (const el of document.querySelectorAll(
          'main td button, main input, main select, main textarea',
        )) {
          const box = el.getBoundingClientRect();
          const what = `${el.tagName} ${el.id || el.textContent}`;
          if (box.left >= window.innerWidth && !keyboardScroller(el))
            found.push(`${what} starts at ${box.left}`);
          const card = el.closest('.card');
          if (card && box.right > card.getBoundingClientRect().right)
            found.push(`${what} sticks out of its card`);
        }
        return found;
      });
      expect({ page: name, misplaced }).toEqual({ page: name, misplaced: [] });
      expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
    }
  } finally {
    await page.setViewport({ width: 1200, height: 780 });
  }
  // On a wide screen the keys table fits: its scroller costs no Tab.
  await go(`/s/${demo.serviceSid}/keys`, '#key-count');
  await page.waitForFunction(() => {
    const scroller = document.querySelector<HTMLElement>('.table-scroll');
    return scroller !== null && scroller.scrollWidth <= scroller.clientWidth && scroller.tabIndex < 0;
  });
});

test("a template over the service's lowered part limit is flagged, not refused", async () => {
  await go(`/s/${demo.serviceSid}/templates`, '#template-body');
  const body = `Your code is {code}. ${'Keep it to yourself. '.repeat(7)}`.trimEnd();
  await setTemplateText(body);
  expect(await text('#template-size')).toMatch(/GSM-7, 171 characters, 2 parts \([^)]*\)$/);
  await page.click('form button[type=submit]');
  await page.waitForFunction((t) => document.querySelector('table')?.textContent?.includes(t), {}, body);
  const added = (await rowTexts('main')).find((row) => row.includes(body));
  expect(added).toContain('GSM-7, 2 parts');
  expect(added).not.toContain('over the limit');

  // An operator lowers the limit to one part: the template stays, flagged.
  await stackAccounts().setTemplateSmsParts({ actor: 'cli:browser-test' }, demo.serviceSid, 1);
  await page.reload();
  await page.waitForSelector('#sms-part-limit');
  expect(await text('#sms-part-limit')).toContain('at most 1 part here');
  const rows = await rowTexts('main');
  expect(rows.find((row) => row.includes(body))).toContain(
    'GSM-7, 2 parts over the limit: still sends, billed per part by the carrier',
  );
  expect(rows.filter((row) => row.includes('over the limit'))).toHaveLength(1);
  // The form measures against the new limit.
  await setTemplateText(body);
  expect(await text('#template-size')).toContain(
    "over this service's limit of 1 part, the server will refuse it",
  );
  expect(await page.$eval('#template-size', (el) => el.className)).toBe('error');
  await shot('templates-over-limit');
  await stackAccounts().setTemplateSmsParts({ actor: 'cli:browser-test' }, demo.serviceSid, undefined);

  // The member removes it (after the confirmation the page asks); the default template has no Remove.
  const before = await stackAccounts().listTemplates(demo.serviceSid);
  await clickInRow(body, 'Remove');
  await page.waitForFunction((t) => !document.querySelector('main')?.textContent?.includes(t), {}, body);
  const after = await stackAccounts().listTemplates(demo.serviceSid);
  expect(after).toHaveLength(before.length - 1);
  expect(after.map((t) => t.body)).not.toContain(body);
  const defaultRow = (await rowTexts('main')).find(
    (row) => row.includes('default') && !row.includes('Make default'),
  );
  expect(defaultRow).toBeDefined();
  expect(defaultRow).not.toContain('Remove');
});

test('the Activity page lists the changes, newest first, with who made them', async () => {
  await go(`/s/${demo.serviceSid}/activity`, '#activity');
  const rows = await rowTexts('#activity');
  const byConsole = `console:${DEMO_CONSOLE_USER}`;
  /** The index of the row holding every part (the rows are newest first). */
  const row = (...parts: string[]) => {
    const index = rows.findIndex((r) => parts.every((part) => r.includes(part)));
    if (index < 0) throw new Error(`No row with ${parts.join(' and ')} in:\n${rows.join('\n')}`);
    return index;
  };
  // The template with markup: its text in the record is shown as text, no element made from it.
  const template = row(byConsole, 'template.add', '"body":"Hi <img src=x onerror=alert(1)> {code}"');
  expect(await page.$$('main img')).toHaveLength(0);
  const webhook = row(byConsole, 'webhook.add', '— → {"endpointSid":"WH', '/_local/webhooks/receiver"}');
  // The member sees the admin command's actor as `operator` (not the operator's login, host or AWS key).
  expect(rows.join('\n')).not.toContain('cli:');
  const lowered = row('operator', 'template.limit', '{"templateSmsParts":2} → {"templateSmsParts":1}');
  const restored = row('operator', 'template.limit', '{"templateSmsParts":1} → {"templateSmsParts":2}');
  // Newest first.
  expect(restored).toBeLessThan(lowered);
  expect(lowered).toBeLessThan(webhook);
  expect(webhook).toBeLessThan(template);
  const times = await page.$$eval('#activity tbody tr td:first-child', (cells) =>
    cells.map((cell) => cell.textContent ?? ''),
  );
  expect(times).toEqual([...times].sort().reverse());
  await shot('activity');
});

test('block a country and see the public API answer 403', async () => {
  await go(`/s/${demo.serviceSid}/rules`, '#country');
  // Each country named as the browser names it, its code the value sent.
  expect(await page.$eval('#country option[value=GB]', (el) => el.textContent)).toBe('GB United Kingdom');
  await page.select('#country', 'GB');
  await clickButton('Block country');
  await page.waitForFunction(() => document.querySelector('table')?.textContent?.includes('GB'));
  await shot('delivery-rules');
  const refused = await send({ To: freshMobile() });
  expect(refused.status).toBe(403);
  expect(((await refused.json()) as { code: string }).code).toBe('blocked_by_policy');
});

test('two changes to the delivery rules clicked at once: the second never undoes the first', async () => {
  const rulesNow = async () => (await stackAccounts().getService(demo.serviceSid))!.rules;
  const before = await rulesNow();
  const asSeeded = { actor: 'cli:browser-test' };
  await stackAccounts().setRules(asSeeded, demo.serviceSid, {
    blockedCountries: [...before.blockedCountries, 'FR', 'IT'],
  });
  /** Clicks each button at once, as a quick hand does before the page is drawn again. */
  const clickAtOnce = (...buttons: [row: string | null, label: string][]) =>
    page.evaluate((list) => {
      for (const [row, label] of list) {
        const scope = row
          ? [...document.querySelectorAll('main table:first-of-type tr')].find(
              (tr) => tr.querySelector('td')?.textContent === row,
            )
          : document;
        const button = [...(scope?.querySelectorAll('button') ?? [])].find((b) => b.textContent === label);
        if (!button) throw new Error(`No ${label} button${row ? ` in the row of ${row}` : ''}`);
        button.click();
      }
    }, buttons);
  try {
    // FR unblocked, then IT: FR stays unblocked (the second save once sent the page's list, FR still in it).
    await go(`/s/${demo.serviceSid}/rules`, '#allow-list');
    await clickAtOnce(['FR', 'Unblock'], ['IT', 'Unblock']);
    await page.waitForNetworkIdle({ idleTime: 300 });
    expect((await rulesNow()).blockedCountries).not.toContain('FR');
    // ES blocked, then a country allowed: the block holds (the allow-list's save sent the blocked list too).
    await go(`/s/${demo.serviceSid}/rules`, '#allow-country');
    await page.select('#country', 'ES');
    await clickAtOnce([null, 'Block country'], [null, 'Allow country']);
    await page.waitForNetworkIdle({ idleTime: 300 });
    expect((await rulesNow()).blockedCountries).toContain('ES');
  } finally {
    await stackAccounts().setRules(asSeeded, demo.serviceSid, {
      blockedCountries: before.blockedCountries,
      blockedPrefixes: before.blockedPrefixes,
      allowedCountries: before.allowedCountries ?? null,
    });
  }
});

test('a change made on lists older than the rules is refused, never undoing a save; the page offers to reload', async () => {
  const rulesNow = async () => (await stackAccounts().getService(demo.serviceSid))!.rules;
  const before = await rulesNow();
  const rulesPath = `/console/api/services/${demo.serviceSid}/rules`;
  // Once a save was made, every read of the rules fails (a gateway's 502): the page cannot draw them again.
  let saved = false;
  let failing = true;
  const failReads = (request: HTTPRequest) => {
    const put = request.method() === 'PUT' && request.url().endsWith(rulesPath);
    if (put) saved = true;
    if (failing && saved && request.method() === 'GET' && request.url().endsWith(rulesPath))
      void request.respond({ status: 502, contentType: 'text/html', body: '<html>Bad Gateway</html>' });
    else void request.continue();
  };
  /** Clicks, and waits until the page has had every answer. */
  const clickAndSettle = async (label: string) => {
    const settled = quietFor(300);
    await clickButton(label);
    await settled;
  };
  await go(`/s/${demo.serviceSid}/rules`, '#country');
  await page.setRequestInterception(true);
  page.on('request', failReads);
  try {
    await page.select('#country', 'NL');
    await clickAndSettle('Block country');
    expect((await rulesNow()).blockedCountries).toContain('NL');
    // A second change, made on the lists the page still shows (NL not among them).
    await page.select('#country', 'SE');
    await clickAndSettle('Block country');
    expect((await rulesNow()).blockedCountries).toContain('NL');
    expect((await rulesNow()).blockedCountries).not.toContain('SE');
    // Refused, said at the top of the page with the way on, where the focus is.
    expect(await text('#rules-outdated p')).toBe(
      'The rules changed since this page was loaded: reload to see them.',
    );
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Reload the rules');
    failing = false;
    await clickButton('Reload the rules');
    await page.waitForFunction(() => document.querySelector('main table')?.textContent?.includes('NL'));
    expect(await page.$('#rules-outdated')).toBeNull();
  } finally {
    page.off('request', failReads);
    await page.setRequestInterception(false);
    await stackAccounts().setRules({ actor: 'cli:browser-test' }, demo.serviceSid, {
      blockedCountries: before.blockedCountries,
    });
  }
  // The browser logs the 502s this test made: not page problems.
  problems.splice(0, problems.length, ...problems.filter((problem) => !problem.includes('status of 502')));
});

test('a guard change made on settings older than the guard is refused, never undoing another; the page offers to reload', async () => {
  const guardNow = async () => (await stackAccounts().getService(demo.serviceSid))!.guard;
  const before = await guardNow();
  await go(`/s/${demo.serviceSid}/guard`, '#guard-level');
  try {
    // Another tab, or the admin command, adds a number to the safe list once this page has read the settings.
    await stackAccounts().setGuardSafeList({ actor: 'cli:browser-test' }, demo.serviceSid, [
      ...(before?.safeList ?? []),
      '+447400555',
    ]);
    // This page changes the level, sending the safe list it shows (without that number).
    await page.select('#guard-level', 'shadow');
    const settled = quietFor(300);
    await clickButton('Save guard setting');
    await settled;
    expect((await guardNow())?.safeList).toContain('+447400555');
    expect((await guardNow())?.level).toBe(before?.level ?? 'standard');
    // Refused, said at the top of the page with the way on, where the focus is; not as the form's error.
    expect(await text('#guard-outdated p')).toBe(
      'The guard settings changed since this page was loaded: reload to see them.',
    );
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Reload the guard settings');
    expect(await text('#guard-error')).toBe('');
    expect(await page.$eval('#guard-level', (el) => el.getAttribute('aria-invalid'))).toBeNull();
    await clickButton('Reload the guard settings');
    await page.waitForFunction(() =>
      (document.querySelector('#safe-list') as HTMLInputElement | null)?.value.includes('+447400555'),
    );
    expect(await page.$('#guard-outdated')).toBeNull();
  } finally {
    await stackAccounts().setGuardSettings({ actor: 'cli:browser-test' }, demo.serviceSid, {
      level: before?.level ?? 'standard',
      safeList: before?.safeList ?? [],
    });
  }
});

test('a channels change made on boxes older than the channels is refused, never undoing another; the page offers to reload', async () => {
  const by = { actor: 'cli:browser-test' };
  const channelsNow = async () => (await stackAccounts().getService(demo.serviceSid))!.enabledChannels;
  const before = await channelsNow();
  await stackAccounts().setChannels(by, demo.serviceSid, [...CHANNELS]);
  await go(`/s/${demo.serviceSid}/settings`, '#ch-viber');
  try {
    // Another tab turns WhatsApp off once this page has read the channels.
    await stackAccounts().setChannels(
      by,
      demo.serviceSid,
      CHANNELS.filter((c) => c !== 'whatsapp'),
    );
    // This page turns Viber off, its WhatsApp box still ticked.
    await page.click('#ch-viber');
    const settled = quietFor(300);
    await clickButton('Save channels');
    await settled;
    expect(await channelsNow()).not.toContain('whatsapp');
    expect(await channelsNow()).toContain('viber');
    // Refused, said at the top of the page with the way on, where the focus is; no box marked invalid.
    expect(await text('#channels-outdated p')).toBe(
      'The channels changed since this page was loaded: reload to see them.',
    );
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Reload the channels');
    expect(await page.$eval('#ch-viber', (el) => el.getAttribute('aria-invalid'))).toBeNull();
    await clickButton('Reload the channels');
    await page.waitForFunction(
      () => (document.querySelector('#ch-whatsapp') as HTMLInputElement | null)?.checked === false,
    );
    expect(await page.$('#channels-outdated')).toBeNull();
  } finally {
    await stackAccounts().setChannels(by, demo.serviceSid, before);
  }
});

test('a save the page failed to read back says so, rather than show the lists from before as they are', async () => {
  const rulesPath = `/console/api/services/${demo.serviceSid}/rules`;
  const before = (await stackAccounts().getService(demo.serviceSid))!.rules;
  let saved = false;
  const failReads = (request: HTTPRequest) => {
    if (request.method() === 'PUT' && request.url().endsWith(rulesPath)) saved = true;
    if (saved && request.method() === 'GET' && request.url().endsWith(rulesPath))
      void request.respond({ status: 502, contentType: 'text/html', body: '<html>Bad Gateway</html>' });
    else void request.continue();
  };
  await go(`/s/${demo.serviceSid}/rules`, '#prefix');
  await page.setRequestInterception(true);
  page.on('request', failReads);
  try {
    await page.type('#prefix', '+4478');
    const settled = quietFor(300);
    await clickButton('Block prefix');
    await settled;
    expect(await text('#rules-outdated p')).toBe(
      'Saved, but the rules could not be read again: the page shows them as they were before the save. The server failed to answer (HTTP 502): try again in a moment.',
    );
    // Not said as the save's failure, nor the field marked.
    expect(await text('#prefix-error')).toBe('');
    expect(await page.$eval('#prefix', (el) => el.getAttribute('aria-invalid'))).toBeNull();
  } finally {
    page.off('request', failReads);
    await page.setRequestInterception(false);
    await stackAccounts().setRules({ actor: 'cli:browser-test' }, demo.serviceSid, {
      blockedPrefixes: before.blockedPrefixes,
    });
  }
  problems.splice(0, problems.length, ...problems.filter((problem) => !problem.includes('status of 502')));
});

test('a save refused for too many requests or by a failing gateway is said, its fields not marked invalid', async () => {
  const rulesPath = `/console/api/services/${demo.serviceSid}/rules`;
  const invalid = (selector: string) => page.$eval(selector, (el) => el.getAttribute('aria-invalid'));
  let answer = { status: 502, contentType: 'text/html', body: '<html>Bad Gateway</html>' };
  const fail = (request: HTTPRequest) => {
    if (request.method() === 'PUT' && request.url().endsWith(rulesPath)) void request.respond(answer);
    else void request.continue();
  };
  /** Waits until a status line in the page says `words`. */
  const saidInPage = (words: string) =>
    page.waitForFunction(
      (w) => [...document.querySelectorAll('main [role=status]')].some((el) => el.textContent?.includes(w)),
      {},
      words,
    );
  await go(`/s/${demo.serviceSid}/rules`, '#allow-country');
  await page.setRequestInterception(true);
  page.on('request', fail);
  try {
    // A form (its error line): the gateway failing.
    await page.type('#prefix', '+4479');
    await clickButton('Block prefix');
    await saidInPage('HTTP 502');
    expect(await text('#prefix-error')).toBe(
      'The server failed to answer (HTTP 502): try again in a moment.',
    );
    expect(await invalid('#prefix')).toBeNull();
    // The console's own per-user limit.
    answer = {
      status: 429,
      contentType: 'application/json',
      body: JSON.stringify({
        code: 'rate_limited',
        message: 'Too many requests from you: at most 120 a minute.',
      }),
    };
    await clickButton('Block prefix');
    await saidInPage('Too many requests from you');
    expect(await invalid('#prefix')).toBeNull();
    // A button that says its answer beside it: API Gateway's throttle.
    answer = { status: 429, contentType: 'application/json', body: '{"message":"Too Many Requests"}' };
    await clickButton('Allow country');
    await saidInPage('The console is busy');
    expect(await invalid('#allow-country')).toBeNull();
  } finally {
    page.off('request', fail);
    await page.setRequestInterception(false);
  }
  problems.splice(0, problems.length, ...problems.filter((problem) => !problem.includes('status of 502')));
});

test("a form's error is its own, tied to the field it is about (aria-invalid, aria-describedby)", async () => {
  /** The field's state: invalid or not, and the text of what describes it. */
  const field = (selector: string) =>
    page.$eval(selector, (el) => ({
      invalid: el.getAttribute('aria-invalid'),
      described: (el.getAttribute('aria-describedby') ?? '')
        .split(' ')
        .map((id) => document.getElementById(id)?.textContent ?? `(no #${id})`)
        .join(' | '),
    }));
  /** Waits until a status line in the page says `words`. */
  const saidInPage = (words: string) =>
    page.waitForFunction(
      (w) => [...document.querySelectorAll('main [role=status]')].some((el) => el.textContent?.includes(w)),
      {},
      words,
    );
  // A prefix the browser refuses: the format said in the prefix form's own line, the country form's line silent.
  await go(`/s/${demo.serviceSid}/rules`, '#prefix');
  await page.type('#prefix', '4474');
  await clickButton('Block prefix');
  await page.waitForFunction(
    () => document.querySelector('#prefix')?.getAttribute('aria-invalid') === 'true',
  );
  const prefix = await field('#prefix');
  expect(prefix.described).toMatch(/E\.164 prefix: \+ and 1 to 15 digits, e\.g\. \+4474/);
  expect(await field('#country')).toEqual({ invalid: null, described: '' });
  // Each form's line follows its own form.
  const lines = await page.$$eval('main form', (forms) =>
    forms.map((form) => form.nextElementSibling?.getAttribute('role') ?? ''),
  );
  expect(lines.slice(0, 2)).toEqual(['status', 'status']);
  // Refused by the server: the field marked and described by the refusal (its size line kept).
  await go(`/s/${demo.serviceSid}/templates`, '#template-body');
  await page.type('#template-body', 'No code here');
  await page.click('form button[type=submit]');
  await page.waitForFunction(
    () => document.querySelector('#template-body')?.getAttribute('aria-invalid') === 'true',
  );
  const body = await field('#template-body');
  expect(body.described).toMatch(/^SMS size: .* \| A template needs the \{code\} placeholder/);
  // Sent again and taken (the page renders again: wait for it).
  await page.type('#template-body', ' {code}');
  await page.click('form button[type=submit]');
  await rowShows('No code here {code}', 'Make default');
  expect(await field('#template-body')).toMatchObject({ invalid: null });

  // A button's refusal beside it is tied to the controls it read: no channel left, every box says so.
  await go(`/s/${demo.serviceSid}/settings`, '#ch-sms');
  const boxes = await page.$$eval('main input[type=checkbox]', (els) =>
    els.map((el) => ({ id: el.id, checked: (el as HTMLInputElement).checked })),
  );
  for (const box of boxes) if (box.checked) await page.click(`#${box.id}`);
  await clickButton('Save channels');
  await saidInPage('channels is empty');
  for (const box of boxes) {
    expect(await field(`#${box.id}`)).toEqual({
      invalid: 'true',
      described: 'channels is empty: give at least one.',
    });
  }
  expect((await stackAccounts().getService(demo.serviceSid))?.enabledChannels).not.toEqual([]);
  // A country the server does not take (one it stopped serving since the page was drawn): the select says so.
  await go(`/s/${demo.serviceSid}/rules`, '#allow-country');
  await page.$eval('#allow-country', (el) => {
    el.append(new Option('XX', 'XX'));
    (el as HTMLSelectElement).value = 'XX';
  });
  await clickButton('Allow country');
  await saidInPage('Not a served country');
  expect(await field('#allow-country')).toEqual({ invalid: 'true', described: 'Not a served country: XX' });
  expect(await field('#disallow-country')).toEqual({ invalid: null, described: '' });
  expect(await page.$eval('#disallow-country', (el) => el.getAttribute('aria-describedby'))).toMatch(/\S/);
});

test('a refused form or button, used by keyboard, keeps the focus on the button pressed', async () => {
  const focused = () => page.evaluate(() => document.activeElement?.textContent ?? '');
  // A form: its submit button is pressed with Enter, and the server refuses the text.
  await go(`/s/${demo.serviceSid}/templates`, '#template-body');
  await page.type('#template-body', 'Still no code');
  await page.focus('form button[type=submit]');
  await page.keyboard.press('Enter');
  await page.waitForFunction(
    () => document.querySelector('#template-body')?.getAttribute('aria-invalid') === 'true',
  );
  expect(await focused()).toBe('Add template');
  // A button beside its controls, pressed with Space: the server refuses the country.
  await go(`/s/${demo.serviceSid}/rules`, '#allow-country');
  await page.$eval('#allow-country', (el) => {
    el.append(new Option('XX', 'XX'));
    (el as HTMLSelectElement).value = 'XX';
  });
  await page.evaluate(() =>
    [...document.querySelectorAll('button')].find((b) => b.textContent === 'Allow country')!.focus(),
  );
  await page.keyboard.press('Space');
  await page.waitForFunction(
    () => document.querySelector('#allow-country')?.getAttribute('aria-invalid') === 'true',
  );
  expect(await focused()).toBe('Allow country');
});

test('what an action did is said to a screen reader, though the page it changed is drawn again', async () => {
  /** Waits until the page's status region, outside its main region, says `words`. */
  const announced = (words: string) =>
    page
      .waitForFunction(
        (w) => {
          const region = document.querySelector('[role=status]:not(main *)');
          return region?.textContent === w;
        },
        { timeout: 3000 },
        words,
      )
      .catch(async () => {
        const said = await page.$$eval('[role=status]:not(main *)', (els) => els.map((el) => el.textContent));
        throw new Error(
          `Not announced: "${words}"; the status regions outside main say ${JSON.stringify(said)}`,
        );
      });
  await go(`/s/${demo.serviceSid}/keys`, 'table');
  await clickButton('Issue a key');
  const keyId = hashApiKey(
    await (await page.waitForSelector('#new-api-key'))!.evaluate((el) => el.textContent!),
  ).slice(0, 12);
  await clickInRow(keyId, 'Revoke');
  await announced(`Key ${keyId} revoked.`);
  // A new page says nothing of the one before it.
  await go(`/s/${demo.serviceSid}/settings`, '#ch-sms');
  expect(await page.$eval('[role=status]:not(main *)', (el) => el.textContent)).toBe('');
  await clickButton('Save channels');
  await announced('Saved the channels.');
  await go(`/s/${demo.serviceSid}/templates`, '#template-body');
  await page.type('#template-body', 'Said when removed {code}');
  await page.click('form button[type=submit]');
  await announced('Template added.');
  const templateSid = await page.evaluate(
    () =>
      [...document.querySelectorAll('tr')]
        .find((tr) => tr.textContent?.includes('Said when removed'))!
        .querySelector('code')!.textContent!,
  );
  await clickInRow('Said when removed', 'Remove');
  await announced(`Template ${templateSid} removed.`);
});

test('the allow-list and the high-risk list on the rules page; caps set, shown reached, removed', async () => {
  await go(`/s/${demo.serviceSid}/settings`, '#allowed-summary');
  // A service made as a new one is: every served country but the high-risk ones, named where it is described.
  expect(await text('#allowed-summary')).toContain('NG Nigeria');
  expect(await text('#guard-summary')).toContain('standard; RiskCheck=disable ignored');
  // The RiskCheck permission, off by default, saved on the service (the guard's page).
  await go(`/s/${demo.serviceSid}/guard`, '#risk-check-opt-out');
  expect(await page.$eval('#risk-check-opt-out', (el) => (el as HTMLInputElement).checked)).toBe(false);
  await page.click('#risk-check-opt-out');
  // Saving renders the page again: mark this checkbox so the wait below sees the new one, not this one.
  await page.$eval('#risk-check-opt-out', (el) => el.setAttribute('data-before-save', ''));
  await clickButton('Save guard setting');
  await eventually(async () =>
    (await stackAccounts().getService(demo.serviceSid))?.guard?.riskCheckOptOut ? true : undefined,
  );
  await page.waitForFunction(() => {
    const box = document.querySelector('#risk-check-opt-out') as HTMLInputElement | null;
    return box !== null && !box.hasAttribute('data-before-save') && box.checked;
  });
  await page.click('#risk-check-opt-out');
  await page.$eval('#risk-check-opt-out', (el) => el.setAttribute('data-before-save', ''));
  await clickButton('Save guard setting');
  await eventually(async () =>
    (await stackAccounts().getService(demo.serviceSid))?.guard?.riskCheckOptOut ? undefined : true,
  );
  // The page renders again after the save: leave once it has, the save answered.
  await page.waitForFunction(() => {
    const box = document.querySelector('#risk-check-opt-out') as HTMLInputElement | null;
    return box !== null && !box.hasAttribute('data-before-save') && !box.checked;
  });

  await go(`/s/${demo.serviceSid}/rules`, '#allow-list');
  expect(await text('#allowed-countries')).toMatch(/^Allowed: .*\bGB\b/);
  expect(await text('#allowed-countries')).not.toContain('NG');
  const highRisk = await page.$$eval('#allow-list tbody tr', (rows) => rows.map((row) => row.textContent));
  expect(highRisk.map((row) => row?.slice(0, 2))).toEqual(['AZ', 'BD', 'NG', 'PK']);
  expect(await page.$eval('#allow-list a[href^="https://www.twilio.com/"]', (a) => a.textContent)).toBe(
    'Twilio',
  );
  // Take DE off: the public API refuses it.
  await page.select('#disallow-country', 'DE');
  await clickButton('Take off');
  await page.waitForFunction(
    () => !document.querySelector('#allowed-countries')?.textContent?.includes('DE'),
  );
  const refused = await send({ To: '+4915123456789' });
  expect(refused.status).toBe(403);
  expect(((await refused.json()) as { message: string }).message).toBe(
    'This service does not send to this country.',
  );
  await clickButton('Reset to default');
  await page.waitForFunction(() => document.querySelector('#allowed-countries')?.textContent?.includes('DE'));

  // A cap for GB: set in the form, shown in the table.
  await page.select('#cap-country', 'GB');
  await page.type('#cap-hourlySends', '5');
  await page.type('#cap-dailySpend', '2.5');
  await clickButton('Set caps');
  await page.waitForFunction(() =>
    [...document.querySelectorAll('#caps tr')].some((tr) => tr.textContent?.startsWith('GB5')),
  );
  expect(await text('#caps tbody')).toContain('2.5000');
  // Choosing a country shows its caps in the form: changing one of them keeps the others.
  await page.select('#cap-country', 'GB');
  expect(await page.$eval('#cap-dailySpend', (el) => (el as HTMLInputElement).value)).toBe('2.5000');
  await page.$eval('#cap-hourlySends', (el) => ((el as HTMLInputElement).value = '6'));
  await clickButton('Set caps');
  await page.waitForFunction(() =>
    [...document.querySelectorAll('#caps tr')].some((tr) => tr.textContent?.startsWith('GB6')),
  );
  expect(await text('#caps tbody')).toContain('2.5000');
  // A number the page cannot read is refused, not saved as "no cap".
  await page.select('#cap-country', 'GB');
  await page.$eval('#cap-hourlySends', (el) => ((el as HTMLInputElement).value = '1,000'));
  await clickButton('Set caps');
  await page.waitForFunction(() => document.querySelector('#caps p[role=status]')?.textContent !== '');
  expect(await text('#caps p[role=status]')).toBe('hourlySends must be a number.');
  // The field it names is the one marked.
  expect(await page.$eval('#cap-hourlySends', (el) => el.getAttribute('aria-invalid'))).toBe('true');
  expect(await page.$eval('#cap-dailySpend', (el) => el.getAttribute('aria-invalid'))).toBeNull();
  expect((await stackAccounts().getService(demo.serviceSid))?.guard?.caps?.GB?.hourlySends).toBe(6);
  // Reached (as the guard's consumer records it): the page alerts the owner.
  await putGuardBlock('GB', { prefix: '+44', reason: 'country_cap', figures: { hourly_sends: 5, cap: 5 } });
  await page.reload();
  await page.waitForSelector('#caps [role=alert]');
  expect(await text('#caps [role=alert]')).toContain('Cap reached: GB hourly sends 5 of 5');
  await page.$eval('#caps', (el) => el.scrollIntoView());
  await shot('caps');
  await page.evaluate(() => {
    const row = [...document.querySelectorAll('#caps tr')].find((tr) => tr.textContent?.startsWith('GB'));
    [...(row?.querySelectorAll('button') ?? [])].find((b) => b.textContent === 'Remove')?.click();
  });
  await page.waitForFunction(() => document.querySelector('#caps')?.textContent?.includes('No caps.'));
});

test("the guard page: level and safe list saved, a block and a conversion drop shown, the block lifted, the API's answer", async () => {
  // The guard's consumer for this test alone, from the stream's tip: it records this test's decisions in the
  // service's report, as the GuardSignals function does (the other tests' sends would make blocks of their own).
  const consumer = await startLocalGuard({
    dynamoEndpoint: table.endpoint,
    tableName: table.name,
    clock: systemClock,
    logger: jsonLogger(() => undefined),
    intervalMs: 200,
  });
  try {
    await guardPageSteps();
  } finally {
    await consumer.close();
  }
});

async function guardPageSteps(): Promise<void> {
  await go(`/s/${demo.serviceSid}/guard`, '#guard-level');
  expect(await page.$eval('#guard-level', (el) => (el as HTMLSelectElement).value)).toBe('standard');
  // A block of an IN range, as the guard's consumer writes one: the page names it, and the API refuses its numbers.
  const to = '+919876543210';
  // No probes field: a block that takes none (this number is never let through as one).
  await putGuardBlock('IN', {
    prefix: '+919876',
    reason: 'prefix_surge',
    figures: { sends_30m: 14, checked: 0, expected: 6.2 },
  });
  const refused = await send({ To: to });
  expect(refused.status).toBe(403);
  expect(((await refused.json()) as { code: string }).code).toBe('blocked_by_policy');
  await page.reload();
  await rowShows('+919876', 'prefix_surge');
  expect(await text('#guard-blocks')).toContain('sends_30m 14, checked 0, expected 6.2');
  // A conversion drop in ID, as the guard's consumer records one: an alert, and nothing refused for it.
  await putGuardState('ID', {
    drop: {
      since: Date.now() - 60_000,
      until: Date.now() + 3_540_000,
      figures: { sends_60m: 212, checked_60m: 68, usual_conversion: 0.81, missing: 104 },
    },
  });
  await page.reload();
  await page.waitForSelector('#guard-drops [role=alert]');
  expect(await text('#guard-drops')).toMatch(
    /Conversion drop in ID .*68 of the last hour's 212 codes were checked \(32\s%\), where its users check 81\s%/,
  );
  // The refusal, folded by the consumer: a decision of the block's reason and prefix, its price saved.
  await eventually(async () => {
    await page.reload();
    await page.waitForSelector('#guard-decisions');
    return (await text('#guard-decisions')).includes('+919876') ? true : undefined;
  });
  expect(await text('#guard-decisions')).toMatch(/blocked\s*prefix_surge\s*\+919876\s*1\s*0\.\d+/);

  // Level and safe list: saved on the service, a bad entry refused with nothing changed.
  await page.select('#guard-level', 'shadow');
  await page.$eval('#safe-list', (el) => ((el as HTMLInputElement).value = '+447400 +1415555'));
  await clickButton('Save guard setting');
  await eventually(async () => {
    const guard = (await stackAccounts().getService(demo.serviceSid))?.guard;
    return guard?.level === 'shadow' && guard.safeList.join() === '+1415555,+447400' ? true : undefined;
  });
  // The page renders again after a save: start from a settled one.
  await page.reload();
  await page.waitForFunction(
    () => (document.querySelector('#safe-list') as HTMLInputElement | null)?.value === '+1415555 +447400',
  );
  await page.$eval('#safe-list', (el) => ((el as HTMLInputElement).value = '+44 7400'));
  await clickButton('Save guard setting');
  await page.waitForFunction(() =>
    [...document.querySelectorAll('[role=status]')].some((el) => el.textContent?.includes('E.164 prefix')),
  );
  expect((await stackAccounts().getService(demo.serviceSid))?.guard?.safeList).toEqual([
    '+1415555',
    '+447400',
  ]);
  await page.reload();
  await page.waitForSelector('#guard-blocks [role=alert]');
  expect(await text('#guard-blocks [role=alert]')).toMatch(/in force; at shadow they refuse nothing/);

  // Back to standard: the blocks refuse again. Then lifted from the page: gone from the table, and the API lets the
  // number through.
  await page.select('#guard-level', 'standard');
  await clickButton('Save guard setting');
  await page.waitForFunction(() =>
    document.querySelector('#guard-blocks [role=alert]')?.textContent?.includes('refuse sends now'),
  );
  await shot('guard');
  await clickInRow('+919876', 'Lift');
  await page.waitForFunction(
    () => !document.querySelector('#guard-blocks')?.textContent?.includes('+919876'),
  );
  expect((await send({ To: to })).status).toBe(201);
  const audit = await stackAccounts().auditTrail(demo.serviceSid, 20);
  expect(audit.map((record) => record.action)).toEqual(
    expect.arrayContaining(['guard.unblock', 'guard.level', 'guard.safelist']),
  );
  // Back as it was for the tests after this one: leave once the save is answered and the page drawn again (the
  // input marked here is replaced).
  await page.$eval('#safe-list', (el) => {
    (el as HTMLInputElement).value = '';
    el.setAttribute('data-before-save', '');
  });
  await clickButton('Save guard setting');
  await page.waitForFunction(() => {
    const input = document.querySelector('#safe-list');
    return input !== null && !input.hasAttribute('data-before-save');
  });
  expect((await stackAccounts().getService(demo.serviceSid))?.guard?.safeList).toEqual([]);
}

test('the operator sees every service, creates one and tops it up', async () => {
  await clickButton('Sign out');
  await page.waitForSelector('#operator');
  await page.click('#operator');
  await page.click('button[type=submit]');
  // Signed in, an operator lands on every service's list, not on one service's settings.
  await page.waitForSelector('#new-name');
  expect(await page.$('#service-sid')).toBeNull();
  await go('/operator', '#new-name');
  await page.type('#new-name', 'Globex');
  await page.$eval('#new-balance', (el) => ((el as HTMLInputElement).value = '5'));
  await page.click('form button[type=submit]');
  await page.waitForFunction(
    (demoSid) => {
      const sid = document.querySelector('#service-sid')?.textContent;
      return sid && sid !== demoSid;
    },
    {},
    demo.serviceSid,
  );
  const created = await text('#service-sid');
  // The picker goes the same way as a link: the service picked stays, when the one before it answers late.
  await go(`/s/${demo.serviceSid}/keys`, '#key-count');
  const demoSettings = await holdRequests(
    (request) => request.method() === 'GET' && request.url().endsWith(`/services/${demo.serviceSid}`),
  );
  await page.click(`nav a[href="#/s/${demo.serviceSid}/settings"]`);
  await demoSettings.arrived;
  await page.select('#service-select', created);
  await page.waitForFunction(
    (sid) => document.querySelector('#service-sid')?.textContent === sid,
    {},
    created,
  );
  await demoSettings.release();
  expect(await text('#service-sid')).toBe(created);
  expect(page.url()).toMatch(new RegExp(`#/s/${created}/settings$`));
  // Every balance comes in one request, not one a service: each counts in the operator's requests a minute.
  const apiGets: string[] = [];
  const noteGet = (request: HTTPRequest) => {
    if (request.method() === 'GET' && request.url().includes('/console/api/'))
      apiGets.push(new URL(request.url()).pathname);
  };
  page.on('request', noteGet);
  await go('/operator', 'table');
  await page.waitForFunction(
    (s) => document.querySelector('tbody')?.textContent?.includes(s),
    {},
    demo.serviceSid,
  );
  await rowShows(created, '5.0000 USD');
  page.off('request', noteGet);
  expect(apiGets.filter((path) => path.startsWith('/console/api/services'))).toEqual([
    '/console/api/services',
  ]);
  // An amount the server refuses marks its field, tied to the refusal; a good one clears the mark.
  const amountField = (sid: string, value: string) =>
    page.evaluate(
      (s, v) => {
        const tr = [...document.querySelectorAll('tr')].find((row) => row.textContent?.includes(s))!;
        tr.querySelector('input')!.value = v;
        tr.querySelector('input')!.dispatchEvent(new Event('input'));
      },
      sid,
      value,
    );
  const amountState = (sid: string) =>
    page.evaluate((s) => {
      const input = [...document.querySelectorAll('tr')]
        .find((row) => row.textContent?.includes(s))!
        .querySelector('input')!;
      const said = document.getElementById(input.getAttribute('aria-describedby') ?? '')?.textContent ?? '';
      return { invalid: input.getAttribute('aria-invalid'), said };
    }, sid);
  await amountField(created, 'abc');
  await clickInRow(created, 'Top up');
  await page.waitForFunction(
    (s) => {
      const tr = [...document.querySelectorAll('tr')].find((row) => row.textContent?.includes(s));
      return tr?.querySelector('input')?.getAttribute('aria-invalid') === 'true';
    },
    {},
    created,
  );
  expect((await amountState(created)).said).not.toBe('');
  await amountField(created, '2.5');
  await clickInRow(created, 'Top up');
  await rowShows(created, '7.5000 USD');
  expect(await amountState(created)).toEqual({ invalid: null, said: '' });
  await shot('operator');
  // A top-up that reaches the service but whose answer is lost (a gateway's 502): clicked again, the page sends
  // the same key, and the money goes in once.
  await page.evaluate((sid) => {
    const input = [...document.querySelectorAll('tr')]
      .find((row) => row.textContent?.includes(sid))!
      .querySelector('input')!;
    input.value = '1';
    input.dispatchEvent(new Event('input'));
  }, created);
  await page.setRequestInterception(true);
  let lost = 0;
  const loseAnswer = (request: HTTPRequest) => {
    if (request.method() !== 'POST' || !request.url().endsWith('/topup') || lost > 0) {
      void request.continue();
      return;
    }
    lost++;
    void fetch(request.url(), { method: 'POST', headers: request.headers(), body: request.postData() }).then(
      () =>
        request.respond({ status: 502, contentType: 'application/json', body: '{"message":"Bad gateway"}' }),
    );
  };
  page.on('request', loseAnswer);
  await clickInRow(created, 'Top up');
  await page.waitForFunction(() => document.body.textContent?.includes('Bad gateway'));
  page.off('request', loseAnswer);
  await page.setRequestInterception(false);
  // The browser logs the 502 this test made: not a page problem.
  problems.splice(0, problems.length, ...problems.filter((problem) => !problem.includes('status of 502')));
  expect((await stackAccounts().getService(created))?.balance).toBe(85_000);
  await clickInRow(created, 'Top up');
  await rowShows(created, '8.5000 USD');
  await rowShows(created, 'Already credited');
  expect((await stackAccounts().getService(created))?.balance).toBe(85_000);
  // The operator reads any service's activity: the new service's creation and top-ups, and the demo's changes.
  await go(`/s/${created}/activity`, '#activity');
  const newService = await rowTexts('#activity');
  expect(newService).toHaveLength(3);
  expect(newService[0]).toMatch(/console:\S+balance\.topup/);
  // Money as the rest of the console shows it, not the table's units of 0.0001 USD.
  expect(newService[0]).toContain(
    '{"balance":"7.5000 USD"} → {"credit":"1.0000 USD","balance":"8.5000 USD"}',
  );
  expect(newService[2]).toContain('"balance":"5.0000 USD"');
  expect(newService[2]).toMatch(/console:\S+service\.create— → \{"name":"Globex"/);
  await go(`/s/${demo.serviceSid}/activity`, '#activity');
  // The demo service's own history, from its seeding on.
  expect((await rowTexts('#activity')).some((row) => row.includes('service.create'))).toBe(true);
});

test('a server out of reach, or a gateway failing, is said in words: on a page and at sign-in', async () => {
  let answer: 'unreachable' | 'gateway' = 'unreachable';
  const fail = (request: HTTPRequest) => {
    const url = request.url();
    if (!url.includes('/console/api/') && !url.endsWith('/console/local/sign-in')) {
      void request.continue();
      return;
    }
    if (answer === 'unreachable') void request.abort('connectionrefused');
    else void request.respond({ status: 502, contentType: 'text/html', body: '<html>Bad Gateway</html>' });
  };
  await page.setRequestInterception(true);
  page.on('request', fail);
  try {
    await page.goto(`${stack.url}/console#/s/${demo.serviceSid}/keys`);
    await page.waitForSelector('main [role=alert]');
    expect(await text('main [role=alert]')).toMatch(/^The console could not reach its server: check your/);
    answer = 'gateway';
    await page.reload();
    await page.waitForSelector('main [role=alert]');
    expect(await text('main [role=alert]')).toBe(
      'The server failed to answer (HTTP 502): try again in a moment.',
    );
    await clickButton('Sign out');
    await page.waitForSelector('#email');
    await page.click('button[type=submit]');
    await page.waitForFunction(() => document.querySelector('form [role=status]')?.textContent !== '');
    expect(await text('form [role=status]')).toBe(
      'The server failed to answer (HTTP 502): try again in a moment.',
    );
    answer = 'unreachable';
    await page.click('button[type=submit]');
    await page.waitForFunction(() =>
      document.querySelector('form [role=status]')?.textContent?.includes('reach'),
    );
  } finally {
    page.off('request', fail);
    await page.setRequestInterception(false);
  }
  // The browser logs the failures this test made: not page problems (an unhandled rejection would be one).
  problems.splice(
    0,
    problems.length,
    ...problems.filter((problem) => !/status of 502|net::ERR_CONNECTION_REFUSED/.test(problem)),
  );
});

test("too many requests are said in words: everyone's (the route's throttle) and one's own, with the wait", async () => {
  await page.goto(`${stack.url}/console`);
  await page.evaluate(() => sessionStorage.clear());
  await page.reload();
  await page.waitForSelector('#email');
  await page.$eval('#email', (el) => ((el as HTMLInputElement).value = ''));
  await page.type('#email', DEMO_CONSOLE_USER);
  await page.$eval('#operator', (el) => ((el as HTMLInputElement).checked = false));
  await page.click('button[type=submit]');
  await page.waitForSelector('#service-sid');
  // Each 429 the console API can get: API Gateway's own when the route is throttled (no code, no Retry-After),
  // and the handler's past the user's own limit (its words, counted in test/integration/console-request-limit).
  const answers = [
    {
      body: { message: 'Too Many Requests' },
      headers: {},
      said: 'The console is busy: too many requests from all its users at once. Try again in a few seconds.',
    },
    {
      body: {
        code: 'rate_limited',
        message: 'Too many requests from you: at most 600 a minute. Try again in 42 seconds.',
      },
      headers: { 'retry-after': '42' },
      said: 'Too many requests from you: at most 600 a minute. Try again in 42 seconds.',
    },
  ];
  for (const answer of answers) {
    const throttled = (request: HTTPRequest) => {
      if (!request.url().includes('/console/api/')) void request.continue();
      else
        void request.respond({
          status: 429,
          contentType: 'application/json',
          headers: answer.headers,
          body: JSON.stringify(answer.body),
        });
    };
    await page.setRequestInterception(true);
    page.on('request', throttled);
    try {
      await go(`/s/${demo.serviceSid}/keys`, 'main [role=alert]');
      expect(await text('main [role=alert]')).toBe(answer.said);
    } finally {
      page.off('request', throttled);
      await page.setRequestInterception(false);
    }
  }
});

test('every view passes axe-core: WCAG 2.2 A and AA, and its best practices', async () => {
  const AXE = readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');
  /** axe-core's violations on the page as it is: each rule's id, impact and the elements it names. */
  const violations = async () => {
    // Evaluated through the DevTools protocol, which the page's CSP (no inline script) does not govern.
    await page.evaluate(AXE);
    return page.evaluate(async () => {
      const axe = (window as unknown as { axe: typeof import('axe-core') }).axe;
      const results = await axe.run(document, {
        runOnly: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'wcag22aa', 'best-practice'],
      });
      return results.violations.map((v) => ({
        rule: v.id,
        impact: v.impact,
        nodes: v.nodes.map((n) => n.target.join(' ')),
      }));
    });
  };
  // The views with what they show at their fullest: a send (its timeline), a block, a new key.
  await send({ To: freshMobile() });
  await putGuardBlock('GB', {
    prefix: '+447400',
    reason: 'low_conversion',
    figures: { sent: 40, checked: 0 },
  });
  await page.goto(`${stack.url}/console`);
  await page.evaluate(() => sessionStorage.clear());
  await page.reload();
  await page.waitForSelector('#email');
  const found: Record<string, unknown> = { 'sign-in': await violations() };
  await page.$eval('#operator', (el) => ((el as HTMLInputElement).checked = true));
  await page.click('button[type=submit]');
  await page.waitForSelector('#new-name');
  found.operator = await violations();
  const views: [string, string, string][] = [
    ['settings', 'settings', '#service-sid'],
    ['keys', 'keys', 'table'],
    ['charges', 'charges', 'main h2'],
    ['verifications', 'verifications', 'table'],
    ['search', `verifications`, '#search'],
    ['conversion', 'conversion', '.bar'],
    ['templates', 'templates', 'table'],
    ['rules', 'rules', '#caps'],
    ['guard', 'guard', '#guard-blocks table'],
    ['webhooks', 'webhooks', '#webhook-url'],
    ['activity', 'activity', '#activity'],
  ];
  for (const [name, path, ready] of views) {
    await go(`/s/${demo.serviceSid}/${path}`, ready);
    if (name === 'search') {
      await page.type('#search', '+447400');
      await page.click('form[role=search] button');
      await page.waitForFunction(() =>
        document.querySelector('main')?.textContent?.includes('searched among'),
      );
    }
    found[name] = await violations();
  }
  await go(`/s/${demo.serviceSid}/verifications`, 'table');
  await page.click('main table a');
  await page.waitForSelector('#timeline');
  found.timeline = await violations();
  await go(`/s/${demo.serviceSid}/keys`, 'table');
  await clickButton('Issue a key');
  await page.waitForSelector('#new-api-key');
  found['new key'] = await violations();
  await go(`/s/VA${'0'.repeat(31)}2/settings`, 'main [role=alert]');
  found['error page'] = await violations();
  expect(found).toEqual(Object.fromEntries(Object.keys(found).map((view) => [view, []])));
});

/**
 * The console as a deployment serves it: config.json names a Cognito domain and app client (CONSOLE_AUTH_URL,
 * CONSOLE_CLIENT_ID), so the page signs in at the hosted sign-in and renews its ID token with the refresh token.
 * There is no Cognito here: the test answers the domain's requests itself (request interception). The ID tokens it
 * hands out are the ones the local sign-in issues, signed with the stack's key: the local stack verifies them in
 * place of the JWT authorizer, as it does every token, and refuses one past its `exp`. The stack has its own table
 * and a clock the tests move on, so that a token the page holds is refused as an hour later.
 */
const AUTH_URL = 'https://auth.console.test';
const CLIENT_ID = 'console-test-client';
let hostedSkewMs = 0;
const hostedClock = { now: () => new Date(Date.now() + hostedSkewMs) };
let hostedStack: LocalStack | undefined;
let hostedTable: TestTable | undefined;
let hostedDemo: DemoAccount;

afterAll(async () => {
  await hostedStack?.close();
  hostedTable?.close();
});

/** What the test's Cognito was asked (path and form fields), and how it answers. */
interface FakeCognito {
  asked: { path: string; fields: Record<string, string> }[];
  /** The API's answers to the page: method, path and status. */
  api: string[];
  /** The ID token a code or a refresh token gets (valid for an hour on the stack's clock unless told otherwise). */
  idToken: () => string;
  /** Refuses refresh tokens (expired, revoked): 400 `invalid_grant`. */
  refuseRefresh: boolean;
  refreshTokens: number;
}

async function hostedConsole(): Promise<{ page: Page; cognito: FakeCognito; url: string }> {
  if (!hostedStack) {
    hostedTable = await freshTable('browser-hosted');
    hostedDemo = await seedDemoAccount(hostedTable.documents, hostedTable.name, MASTER_KEY);
    hostedStack = await startLocalStack({
      dynamoEndpoint: hostedTable.endpoint,
      tableName: hostedTable.name,
      masterKey: MASTER_KEY,
      env: {
        ...process.env,
        CONSOLE_AUTH_URL: AUTH_URL,
        CONSOLE_CLIENT_ID: CLIENT_ID,
        OTP_CONSOLE_REQUESTS_PER_MINUTE: '600',
      },
      logger: jsonLogger(() => undefined),
      sweepIntervalMs: 0,
      override: { clock: hostedClock },
    });
  }
  const url = hostedStack.url;
  const issuer = new LocalConsoleAuth(MASTER_KEY, () => hostedClock.now());
  const cognito: FakeCognito = {
    asked: [],
    api: [],
    idToken: () => issuer.sign(DEMO_CONSOLE_USER, false).token,
    refuseRefresh: false,
    refreshTokens: 0,
  };
  const hosted = await browser.newPage();
  hosted.setDefaultTimeout(10_000);
  hosted.on('console', (message) => {
    if (message.type() === 'error') problems.push(message.text());
  });
  hosted.on('pageerror', (error) => problems.push(String(error)));
  hosted.on('response', (response) => {
    const path = new URL(response.url()).pathname;
    if (path.startsWith('/console/api/')) {
      cognito.api.push(`${response.request().method()} ${path} ${response.status()}`);
    }
  });
  const cors = { 'access-control-allow-origin': url };
  const json = (status: number, body: unknown) => ({
    status,
    contentType: 'application/json',
    headers: cors,
    body: JSON.stringify(body),
  });
  await hosted.setRequestInterception(true);
  hosted.on('request', (request) => {
    if (!request.url().startsWith(`${AUTH_URL}/`)) return void request.continue();
    const target = new URL(request.url());
    const fields = Object.fromEntries(
      new URLSearchParams(request.method() === 'POST' ? (request.postData() ?? '') : target.search),
    );
    cognito.asked.push({ path: target.pathname, fields });
    const answer = (): Parameters<HTTPRequest['respond']>[0] => {
      switch (target.pathname) {
        case '/oauth2/authorize':
          // Signed in at once: back to the registered address with a code and the page's state.
          return {
            status: 302,
            headers: {
              location: `${fields.redirect_uri}?code=code-${cognito.asked.length}&state=${fields.state}`,
            },
          };
        case '/logout':
          return { status: 302, headers: { location: fields.logout_uri! } };
        case '/oauth2/revoke':
          return { status: 200, headers: cors, body: '' };
        case '/oauth2/token':
          if (fields.grant_type === 'authorization_code') {
            return json(200, {
              id_token: cognito.idToken(),
              access_token: 'not-used',
              refresh_token: `refresh-${++cognito.refreshTokens}`,
              expires_in: 3600,
              token_type: 'Bearer',
            });
          }
          if (cognito.refuseRefresh) return json(400, { error: 'invalid_grant' });
          // As Cognito answers a refresh without token rotation: new ID and access tokens, no refresh token.
          return json(200, {
            id_token: cognito.idToken(),
            access_token: 'not-used',
            expires_in: 3600,
            token_type: 'Bearer',
          });
        default:
          return { status: 404, headers: cors, body: '' };
      }
    };
    void request.respond(answer());
  });
  return { page: hosted, cognito, url };
}

/** The hosted sign-in, from the sign-in page the console shows at `hash`; resolves once `ready` is shown. */
async function hostedSignIn(hosted: Page, url: string, hash: string, ready: string): Promise<void> {
  if (!hosted.url().startsWith(url)) await hosted.goto(`${url}/console#${hash}`);
  await hosted.waitForFunction(() =>
    [...document.querySelectorAll('main button')].some((b) => b.textContent === 'Sign in'),
  );
  await hosted.evaluate(() =>
    [...document.querySelectorAll<HTMLButtonElement>('main button')]
      .find((b) => b.textContent === 'Sign in')!
      .click(),
  );
  await hosted.waitForSelector(ready);
}
/** Runs `run` on a new page of the hosted console, the stack's clock on time before it and after it. */
async function withHostedConsole(
  run: (hosted: Page, cognito: FakeCognito, url: string) => Promise<void>,
): Promise<void> {
  hostedSkewMs = 0;
  const { page: hosted, cognito, url } = await hostedConsole();
  try {
    await run(hosted, cognito, url);
  } finally {
    hostedSkewMs = 0;
    await hosted.close();
  }
}

const refreshes = (cognito: FakeCognito) =>
  cognito.asked.filter(
    (asked) => asked.path === '/oauth2/token' && asked.fields.grant_type === 'refresh_token',
  );

test('an hour on, a refused token is renewed once and the request sent again: what the user typed is saved', () =>
  withHostedConsole(async (hosted, cognito, url) => {
    await hostedSignIn(hosted, url, '', '#service-sid');
    await hosted.evaluate((sid) => (location.hash = `#/s/${sid}/templates`), hostedDemo.serviceSid);
    await hosted.waitForSelector('#template-body');
    const body = `Typed before the hour was up: {code} ${Date.now()}`;
    await hosted.type('#template-body', body);
    // The server an hour on: the page's ID token, good by its own clock, is refused.
    hostedSkewMs = 61 * 60_000;
    cognito.api.length = 0;
    await hosted.click('form button[type=submit]');
    await hosted.waitForFunction((t) => document.querySelector('table')?.textContent?.includes(t), {}, body);
    expect(refreshes(cognito).map((asked) => asked.fields)).toEqual([
      { grant_type: 'refresh_token', client_id: CLIENT_ID, refresh_token: 'refresh-1' },
    ]);
    const templates = `/console/api/services/${hostedDemo.serviceSid}/templates`;
    expect(cognito.api.filter((line) => line.startsWith(`POST ${templates} `))).toEqual([
      `POST ${templates} 401`,
      `POST ${templates} 201`,
    ]);
    const saved = await dynamoAccounts(hostedTable!.documents, hostedTable!.name).listTemplates(
      hostedDemo.serviceSid,
    );
    expect(saved.filter((template) => template.body === body)).toHaveLength(1);

    // Requests made at once (the rules page reads the rules and the caps) share one renewal.
    hostedSkewMs = 2 * 61 * 60_000;
    cognito.api.length = 0;
    await hosted.evaluate((sid) => (location.hash = `#/s/${sid}/rules`), hostedDemo.serviceSid);
    await hosted.waitForSelector('#caps');
    expect(refreshes(cognito)).toHaveLength(2);
    expect(cognito.api.filter((line) => line.endsWith(' 401'))).toHaveLength(2);
  }));

test('an ID token within a minute of its expiry is renewed before the request, which is never refused', () =>
  withHostedConsole(async (hosted, cognito, url) => {
    // The code exchange hands the page a token with 30 seconds to go; the renewal one with an hour.
    const nearExpiry = new LocalConsoleAuth(MASTER_KEY, () => new Date(Date.now() - 3_570_000));
    const fullHour = cognito.idToken;
    cognito.idToken = () => {
      cognito.idToken = fullHour;
      return nearExpiry.sign(DEMO_CONSOLE_USER, false).token;
    };
    await hostedSignIn(hosted, url, '', '#service-sid');
    await hosted.evaluate((sid) => (location.hash = `#/s/${sid}/keys`), hostedDemo.serviceSid);
    await hosted.waitForSelector('#key-count');
    // Renewed once, before the first request, and nothing was refused.
    expect(refreshes(cognito)).toHaveLength(1);
    expect(cognito.api.length).toBeGreaterThanOrEqual(3);
    expect(cognito.api.filter((line) => line.endsWith(' 401'))).toEqual([]);
  }));

test('a session past its renewal shows the sign-in at the same page, and signing in returns to it', () =>
  withHostedConsole(async (hosted, cognito, url) => {
    // Arriving signed out at a page: the hosted sign-in brings the user back to it, not to /console.
    await hostedSignIn(hosted, url, `/s/${hostedDemo.serviceSid}/keys`, '#key-count');
    expect(new URL(hosted.url()).hash).toBe(`#/s/${hostedDemo.serviceSid}/keys`);
    // Twelve hours on, the refresh token is refused too: the sign-in, on the page the user was on.
    hostedSkewMs = 12 * 3_600_000;
    cognito.refuseRefresh = true;
    await hosted.evaluate((sid) => (location.hash = `#/s/${sid}/webhooks`), hostedDemo.serviceSid);
    await hostedSignIn(hosted, url, '', '#webhook-url');
    expect(refreshes(cognito)).toHaveLength(1);
    expect(new URL(hosted.url()).hash).toBe(`#/s/${hostedDemo.serviceSid}/webhooks`);
  }));

test('signing out revokes the refresh token and forgets it', () =>
  withHostedConsole(async (hosted, cognito, url) => {
    await hostedSignIn(hosted, url, `/s/${hostedDemo.serviceSid}/settings`, '#service-sid');
    await hosted.click('#sign-out');
    await eventually(async () => cognito.asked.find((asked) => asked.path === '/logout'));
    await hosted.waitForFunction(() =>
      [...document.querySelectorAll('main button')].some((b) => b.textContent === 'Sign in'),
    );
    const asked = cognito.asked.map((a) => a.path);
    expect(asked.slice(-2)).toEqual(['/oauth2/revoke', '/logout']);
    expect(cognito.asked.at(-2)!.fields).toEqual({ token: 'refresh-1', client_id: CLIENT_ID });
    expect(await hosted.evaluate(() => Object.values(sessionStorage))).not.toContain('refresh-1');
    expect(await hosted.evaluate(() => sessionStorage.getItem('otp-console-token'))).toBeNull();
  }));
