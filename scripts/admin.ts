/**
 * `npm run admin -- <command>`: what a dashboard would do to accounts, against the running local stack or
 * a deployed table. `npm run admin -- help` lists the commands; docs/admin.md explains them.
 * The logic is in `./admin/cli.ts` (`runAdmin`), which the tests call in-process.
 */
import { runAdmin } from './admin/cli';

// On Node 20 the AWS SDK prints a multi-line support notice on every run; an operator's command (and a
// script reading its stderr) is better without it. The SDK checks this when the first client is built.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

runAdmin(process.argv.slice(2), {
  out: (text) => process.stdout.write(`${text}\n`),
  err: (text) => process.stderr.write(`${text}\n`),
}).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    // runAdmin reports its own errors; reaching here is a bug in the command itself.
    process.stderr.write(`admin: internal error: ${String(error)}\n`);
    process.exitCode = 1;
  },
);
