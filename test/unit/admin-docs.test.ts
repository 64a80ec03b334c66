/**
 * docs/admin.md's command list and the admin command agree: every command is documented, under its own words, and
 * every documented command exists. A renamed or new command fails here, not in a reader's shell.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { COMMANDS } from '../../scripts/admin/commands';
import { REPO_ROOT } from '../../scripts/check-links';

const page = readFileSync(join(REPO_ROOT, 'docs/admin.md'), 'utf8');
const commandsSection = page.slice(page.indexOf('\n## Commands\n'), page.indexOf('\n## Examples\n'));

/** The words of each documented command: a list item's code spans, `service create --name…` → `service create`. */
function documentedCommands(): string[] {
  const words = new Set<string>();
  for (const item of commandsSection.split('\n- ').slice(1)) {
    const head = item.slice(0, item.search(/`:\s/) + 1);
    for (const [, span] of head.matchAll(/`([^`]+)`/g)) {
      // Words are lower-case; arguments (VA, CC…), options and alternatives start otherwise.
      const lead = span!
        .split(' ')
        .filter((word, i, all) => all.slice(0, i + 1).every((w) => /^[a-z]+(-[a-z]+)*$/.test(w)));
      words.add(lead.join(' '));
    }
  }
  return [...words].sort();
}

describe('docs/admin.md', () => {
  it('documents every admin command, and no command that does not exist', () => {
    const commands = [...COMMANDS.map((command) => command.words.join(' ')), 'help'].sort();
    expect(documentedCommands()).toEqual(commands);
  });

  it("gives balance shards's threshold as the command's help does", () => {
    // The rate above which a service's sends start meeting on its one balance item (ADR 0014's measure).
    const item = commandsSection.slice(commandsSection.indexOf('- `balance shards'));
    const documented = /more\s+than\s+about\s+(\d+)\s+a\s+second/.exec(item)?.[1];
    const shards = COMMANDS.find((command) => command.words.join(' ') === 'balance shards');
    expect(documented).toBeDefined();
    expect(shards?.summary).toContain(`~${documented} a second`);
  });
});
