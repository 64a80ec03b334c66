/**
 * Jest setup file of the `dynamodb` project: with `OTP_RECORD_ANSWERS=<directory>`, records each test file's
 * answers there (answer-recorder.ts); without it, does nothing.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { installAnswerRecorder, recordAdmin } from './answer-recorder';

const directory = process.env.OTP_RECORD_ANSWERS;
const rootDir = join(__dirname, '..', '..');
const adminCli = join(rootDir, 'scripts', 'admin', 'cli.ts');

if (directory) {
  const recorder = installAnswerRecorder({
    directory,
    rootDir,
    testPath: expect.getState().testPath ?? '',
    currentTest: () => expect.getState().currentTestName ?? '',
  });
  afterAll(() => recorder.flush());

  // The admin command's printed output is an answer too: every test file's `runAdmin` goes through the recorder.
  if (existsSync(adminCli)) {
    jest.mock(adminCli, () => {
      const actual = jest.requireActual<typeof import('../../scripts/admin/cli')>(adminCli);
      return {
        ...actual,
        runAdmin: (...[argv, io, options]: Parameters<typeof actual.runAdmin>) =>
          recordAdmin(argv, (out, err) =>
            actual.runAdmin(
              argv,
              {
                out: (text) => (out(text), io.out(text)),
                err: (text) => (err(text), io.err(text)),
              },
              options,
            ),
          ),
      };
    });
  }
}
