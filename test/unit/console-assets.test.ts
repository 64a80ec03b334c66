/**
 * The console's files build as the local stack and the deployment build them. The script bundles
 * functions/core/sms-segments.ts for the template form: a Node built-in reached from that module breaks the build.
 */
import { buildConsoleAssets } from '../../lib/console-assets';

test("the console's page, script and style build, the script with the template form's SMS size", () => {
  const { files } = buildConsoleAssets();
  expect(Object.keys(files).sort()).toEqual(['app.css', 'app.js', 'index.html']);
  expect(files['app.js']).toContain('UTF-16 units');
});
