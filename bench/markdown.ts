/**
 * The generated results pages: docs/bench-results.md, the latest of `npm run bench -- --markdown`, and
 * docs/guard-results.md, of `npm run bench:guard -- --markdown`. A page has sections between markers (the
 * service's, the provider fees', the capacity's; the guard's matrix at standard, at strict, without receipts); each
 * command replaces only its own, so a page keeps the others' last results. A table cell longer than
 * MAX_CELL_CHARS is moved into a numbered note under its table (one long cell makes prettier pad the whole table),
 * and the page is formatted as `npm run lint` expects.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { renderReport, type BenchResults, type Target } from './report';

const DOCS = join(__dirname, '..', 'docs');

export type Section = 'bench' | 'fees' | 'capacity' | 'guard' | 'guardStrict' | 'guardNoReceipts';

type Page = 'bench' | 'guard';

const SECTIONS: Record<Section, { page: Page; heading: string; command: string }> = {
  bench: { page: 'bench', heading: 'Service', command: 'npm run bench -- --markdown' },
  fees: { page: 'bench', heading: 'Provider fees', command: 'npm run bench -- --fees --markdown' },
  capacity: {
    page: 'bench',
    heading: 'Capacity of one service',
    command: 'npm run bench -- --capacity --markdown',
  },
  guard: { page: 'guard', heading: 'Pumping guard', command: 'npm run bench:guard -- --markdown' },
  guardStrict: {
    page: 'guard',
    heading: 'Pumping guard at strict',
    command: 'npm run bench:guard -- --level strict --markdown',
  },
  guardNoReceipts: {
    page: 'guard',
    heading: 'Pumping guard without receipts',
    command: 'npm run bench:guard -- --receipts none --markdown',
  },
};

const PAGES: Record<Page, { file: string; header: string }> = {
  bench: {
    file: join(DOCS, 'bench-results.md'),
    header: [
      '# Benchmark results',
      '',
      'Generated: do not edit by hand. `npm run bench -- --markdown` rewrites these sections (add',
      '`--from-results` to render the last run again without running, `--fees` or `--capacity` for one alone).',
      "The pumping guard's evaluation: [guard-results.md](guard-results.md). How to run the benches and what each",
      'figure means: [bench.md](bench.md). Compare ratios, not milliseconds, between runs: the machine may be shared.',
    ].join('\n'),
  },
  guard: {
    file: join(DOCS, 'guard-results.md'),
    header: [
      '# Pumping guard results',
      '',
      'Generated: do not edit by hand. `npm run bench:guard -- --markdown` rewrites the first section, with',
      '`--level strict` the second, with `--receipts none` the third (`--report --markdown` renders the published',
      'figures again without running). The scenarios and how to read the tables: [bench.md](bench.md#pumping-guard);',
      'the guard itself: [guard.md](guard.md).',
    ].join('\n'),
  },
};

/** A page's sections, in the order it shows them. */
const sectionsOf = (page: Page): Section[] =>
  (Object.keys(SECTIONS) as Section[]).filter((section) => SECTIONS[section].page === page);

const MAX_CELL_CHARS = 40;

const startMarker = (section: Section) => `<!-- ${section} results: start -->`;
const endMarker = (section: Section) => `<!-- ${section} results: end -->`;

function sectionSkeleton(section: Section): string {
  const { heading, command } = SECTIONS[section];
  return [
    `## ${heading}`,
    '',
    startMarker(section),
    '',
    `Not run yet: \`${command}\`.`,
    '',
    endMarker(section),
  ].join('\n');
}

/** The cells of a Markdown table row (escaped pipes stay in their cell). */
function cellsOf(row: string): string[] {
  return row
    .trim()
    .replace(/^\|/, '')
    .replace(/\|$/, '')
    .split(/(?<!\\)\|/)
    .map((cell) => cell.trim());
}

/**
 * Every table cell longer than `maxChars`, but the row's label (first column), replaced by `note N`, its text in
 * a numbered list under the table; a row of one cell in a wider table (a note printed right under a table)
 * becomes a paragraph after it.
 */
export function moveLongCells(markdown: string, maxChars = MAX_CELL_CHARS): string {
  const lines = markdown.split('\n');
  const out: string[] = [];
  let index = 0;
  while (index < lines.length) {
    if (!lines[index]!.trimStart().startsWith('|')) {
      out.push(lines[index]!);
      index += 1;
      continue;
    }
    const block: string[] = [];
    while (index < lines.length && lines[index]!.trimStart().startsWith('|')) block.push(lines[index++]!);
    const columns = cellsOf(block[0]!).length;
    const notes: string[] = [];
    const paragraphs: string[] = [];
    block.forEach((row, rowIndex) => {
      if (rowIndex < 2) {
        out.push(row);
        return;
      }
      const cells = cellsOf(row);
      if (cells.length === 1 && columns > 1) {
        paragraphs.push(cells[0]!.replaceAll('\\|', '|'));
        return;
      }
      const short = cells.map((cell, column) => {
        if (column === 0 || cell.length <= maxChars) return cell;
        notes.push(cell.replaceAll('\\|', '|'));
        return `note ${notes.length}`;
      });
      out.push(`| ${short.join(' | ')} |`);
    });
    if (notes.length > 0) out.push('', ...notes.map((note, n) => `${n + 1}. ${note}`));
    for (const paragraph of paragraphs) out.push('', paragraph);
    // A line right under a table is one of its rows to Markdown (prettier pads the table to its width).
    const textFollows = (lines[index] ?? '').trim() !== '';
    if (notes.length > 0 || paragraphs.length > 0 || textFollows) out.push('');
  }
  return out.join('\n');
}

/**
 * The targets as a list (as a table, their long names and notes made the page's widest table); each name states
 * its limit, so the limit is not repeated. A family of targets (one per entry) is one line: met when every member
 * is, its members' figures side by side, and each missed member named with its whole measure.
 */
export function targetsList(targets: Target[]): string {
  // A family's place is its first member's; its later members join it there.
  const entries: (Target | Target[])[] = [];
  const families = new Map<string, Target[]>();
  for (const target of targets) {
    const family = target.group && families.get(target.group.title);
    if (family) family.push(target);
    else if (target.group) {
      const members = [target];
      families.set(target.group.title, members);
      entries.push(members);
    } else entries.push(target);
  }
  return entries
    .map((entry) =>
      Array.isArray(entry)
        ? groupLine(entry[0]!.group!.title, entry)
        : `- ${entry.met ? 'met' : '**missed**'}: ${entry.target}. Measured ${entry.measured}.` +
          (entry.note ? ` ${entry.note}.` : ''),
    )
    .join('\n');
}

function groupLine(title: string, members: Target[]): string {
  const missed = members.filter((member) => !member.met);
  const notes = new Map<string, string[]>();
  for (const { group } of members)
    if (group?.note) notes.set(group.note, [...(notes.get(group.note) ?? []), group.item]);
  return [
    `- ${missed.length === 0 ? 'met' : '**missed**'}: ${title}.`,
    `Measured ${members.map(({ group }) => `${group!.item} ${group!.value}`).join(', ')}.`,
    ...[...notes].map(([note, items]) => `${items.join(', ')}: ${note}.`),
    ...missed.map((member) => `Missed: ${member.target}, measured ${member.measured}.`),
  ].join(' ');
}

/** The service bench's section: the run line and every table of `renderReport` (long cells as notes), targets. */
export function benchSection(results: BenchResults): string {
  // The capacity figures have a section of their own (`--capacity` rewrites them alone).
  const tables = renderReport({ ...results, capacity: undefined, targets: [] }, true);
  const cut = tables.lastIndexOf('\n### Targets\n');
  return `${moveLongCells(cut < 0 ? tables : tables.slice(0, cut))}\n\n### Targets\n\n${targetsList(results.targets)}\n`;
}

/**
 * The page with `section` replaced by `body` (the page and its other sections kept, or made when absent). A page
 * written before `section` had its place gets it after the section it follows.
 */
export function withSection(page: string | undefined, section: Section, body: string): string {
  const own = sectionsOf(SECTIONS[section].page);
  let text = page ?? [PAGES[SECTIONS[section].page].header, ...own.map(sectionSkeleton)].join('\n\n');
  if (!text.includes(startMarker(section)) || !text.includes(endMarker(section))) {
    const previous = own[own.indexOf(section) - 1];
    const after = previous ? text.indexOf(endMarker(previous)) : -1;
    const end = previous ? after + endMarker(previous).length : 0;
    text =
      after < 0
        ? `${text.trimEnd()}\n\n${sectionSkeleton(section)}\n`
        : `${text.slice(0, end)}\n\n${sectionSkeleton(section)}${text.slice(end)}`;
  }
  const from = text.indexOf(startMarker(section)) + startMarker(section).length;
  const to = text.indexOf(endMarker(section));
  return `${text.slice(0, from)}\n\n${moveLongCells(body).trim()}\n\n${text.slice(to)}`;
}

/** Writes `body` as `section` of its page, formatted by prettier with the repository's settings. */
export async function writeSection(
  section: Section,
  body: string,
  file = PAGES[SECTIONS[section].page].file,
): Promise<void> {
  const page = existsSync(file) ? readFileSync(file, 'utf8') : undefined;
  // Loaded here: prettier's module imports its plugins dynamically, which Jest's runtime cannot (the tests need
  // only the text functions above).
  const prettier = await import('prettier');
  const options = (await prettier.resolveConfig(file)) ?? {};
  writeFileSync(
    file,
    await prettier.format(withSection(page, section, body), { ...options, filepath: file }),
  );
  process.stderr.write(`wrote the ${SECTIONS[section].heading} section of ${file}\n`);
}

/** Rewrites a file the bench wrote (its raw results) as prettier formats it, so that `npm run lint` passes. */
export async function formatFile(file: string): Promise<void> {
  const prettier = await import('prettier');
  const options = (await prettier.resolveConfig(file)) ?? {};
  writeFileSync(file, await prettier.format(readFileSync(file, 'utf8'), { ...options, filepath: file }));
}
