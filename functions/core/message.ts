/**
 * A template's text with the code in it. Its own module, free of Node built-ins, because the console's page
 * (console/ui) bundles sms-segments.ts, which measures templates with it.
 */

/** Puts the code into the template text. */
export const renderMessage = (template: string, code: string): string => template.split('{code}').join(code);
