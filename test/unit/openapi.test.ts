/**
 * The OpenAPI document (functions/http/openapi.ts): the committed docs/openapi.json is the generated one, it is
 * valid OpenAPI 3.1 (Redocly lint with the repository's config), and it names every error code of the API
 * under the right endpoint and status, and every code of the status table in functions/http/errors.ts.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ErrorCode } from '../../functions/core/errors';
import { STATUS_BY_CODE } from '../../functions/http/errors';
import {
  OPENAPI_PATHS,
  ROUTE_ERRORS,
  UNDOCUMENTED_ERRORS,
  buildOpenApiDocument,
  type OperationName,
} from '../../functions/http/openapi';
import { MAX_IDEMPOTENCY_KEY_LENGTH } from '../../functions/http/params';

const ROOT = join(__dirname, '..', '..');
type Json = Record<string, unknown>;
const doc = buildOpenApiDocument() as Json & {
  paths: Record<string, Record<string, Json>>;
  components: Json;
};

/** Spec part 7's summary table (and 4.1 to 4.3), written out here rather than read from the code under test. */
const SPEC_ERRORS: Record<OperationName, Record<number, ErrorCode[]>> = {
  send: {
    400: [
      'invalid_parameter',
      'invalid_code',
      'unroutable',
      'no_default_template',
      'no_eligible_channel',
      'unreachable',
    ],
    402: ['insufficient_funds'],
    403: ['blocked_by_policy'],
    404: ['unknown_template'],
    429: ['burst', 'rate_limited'],
    500: ['not_priceable'],
  },
  check: { 400: ['invalid_parameter'], 404: ['not_found'], 409: ['client_code'] },
  fetch: { 404: ['not_found'] },
};

/** The service's own answers (docs/api.md, Choices where the interface is open). */
const OWN_ERRORS: Record<OperationName, Record<number, ErrorCode[]>> = {
  send: {
    401: ['unauthorized'],
    403: ['forbidden'],
    429: ['rate_limited'],
    500: ['internal_error'],
    503: ['service_unavailable'],
  },
  check: { 401: ['unauthorized'], 403: ['forbidden'], 429: ['rate_limited'], 500: ['internal_error'] },
  fetch: { 401: ['unauthorized'], 403: ['forbidden'], 429: ['rate_limited'], 500: ['internal_error'] },
};

const operation = (name: OperationName): Json & { responses: Record<string, Json> } => {
  const { method, path } = OPENAPI_PATHS[name];
  return doc.paths[path]![method] as Json & { responses: Record<string, Json> };
};

/** Every error `code` enum in a schema, wherever it is nested (a 409 of the check is a oneOf). */
function errorCodesIn(schema: unknown): string[] {
  if (Array.isArray(schema)) return schema.flatMap(errorCodesIn);
  if (typeof schema !== 'object' || schema === null) return [];
  const node = schema as Json;
  const code = (node.properties as Json | undefined)?.code as { enum?: string[] } | undefined;
  return [...(code?.enum ?? []), ...Object.values(node).flatMap(errorCodesIn)];
}

const codesAt = (name: OperationName, status: number | 'default'): string[] => {
  const response = operation(name).responses[String(status)] as { content?: Json } | undefined;
  return errorCodesIn(response?.content);
};

const allOperationCodes = (): Map<string, Set<number>> => {
  const found = new Map<string, Set<number>>();
  for (const name of Object.keys(OPENAPI_PATHS) as OperationName[]) {
    for (const status of Object.keys(operation(name).responses)) {
      if (status === 'default') continue;
      for (const code of codesAt(name, Number(status)))
        found.set(code, new Set([...(found.get(code) ?? []), Number(status)]));
    }
  }
  return found;
};

describe('the committed document', () => {
  it('is the generated one: run `npm run openapi` and commit docs/openapi.json', () => {
    const committed = JSON.parse(readFileSync(join(ROOT, 'docs', 'openapi.json'), 'utf8')) as unknown;
    expect(committed).toEqual(JSON.parse(JSON.stringify(doc)));
  });

  it('is valid OpenAPI 3.1: Redocly lint with the repository config passes', () => {
    expect(doc.openapi).toBe('3.1.0');
    const dir = mkdtempSync(join(tmpdir(), 'openapi-'));
    try {
      const file = join(dir, 'openapi.json');
      writeFileSync(file, JSON.stringify(doc));
      const result = spawnSync(
        join(ROOT, 'node_modules', '.bin', 'redocly'),
        ['lint', file, '--config', join(ROOT, 'redocly.yaml'), '--format', 'stylish'],
        {
          encoding: 'utf8',
          env: { ...process.env, REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' },
          timeout: 60_000,
        },
      );
      expect({
        status: result.status,
        output: result.status === 0 ? '' : result.stdout + result.stderr,
      }).toEqual({
        status: 0,
        output: '',
      });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('error codes', () => {
  it.each(Object.keys(SPEC_ERRORS) as OperationName[])(
    '%s: every code of the spec and of the service under its status',
    (name) => {
      for (const table of [SPEC_ERRORS[name], OWN_ERRORS[name]]) {
        for (const [status, codes] of Object.entries(table)) {
          expect({ status, codes: codesAt(name, Number(status)) }).toEqual({
            status,
            codes: expect.arrayContaining(codes),
          });
        }
      }
    },
  );

  it('each operation answers exactly its codes: no code of another endpoint', () => {
    for (const name of Object.keys(SPEC_ERRORS) as OperationName[]) {
      const expected = [SPEC_ERRORS[name], OWN_ERRORS[name]].flatMap((table) => Object.values(table).flat());
      const documented = Object.keys(operation(name).responses)
        .filter((status) => status !== 'default')
        .flatMap((status) => codesAt(name, Number(status)));
      expect({ name, codes: [...new Set(documented)].sort() }).toEqual({
        name,
        codes: [...new Set(expected)].sort(),
      });
    }
  });

  it('every code of errors.ts is under the status that table gives it, or said why not', () => {
    const found = allOperationCodes();
    for (const [code, status] of Object.entries(STATUS_BY_CODE) as [ErrorCode, number][]) {
      if (ROUTE_ERRORS.includes(code) || UNDOCUMENTED_ERRORS.includes(code)) {
        expect(found.has(code)).toBe(false);
        continue;
      }
      expect({ code, statuses: [...(found.get(code) ?? [])] }).toEqual({ code, statuses: [status] });
    }
    // The codes of no operation: in the generic Error schema (route errors) and the description, or left out.
    const generic = errorCodesIn((doc.components.schemas as Json).Error);
    for (const code of ROUTE_ERRORS) {
      expect(generic).toContain(code);
      expect((doc.info as Json).description).toContain(`\`${code}\``);
    }
    expect(generic).not.toContain('invalid_signature');
    expect(Object.keys(doc.paths).some((path) => path.includes('Callbacks'))).toBe(false);
  });

  it('every operation has a default response: any other status is an error', () => {
    for (const name of Object.keys(SPEC_ERRORS) as OperationName[])
      expect(operation(name).responses.default).toBeDefined();
  });
});

describe('headers, security and bodies', () => {
  it('X-API-Key is the one security scheme, required everywhere', () => {
    expect(doc.security).toEqual([{ ApiKey: [] }]);
    expect((doc.components.securitySchemes as Json).ApiKey).toMatchObject({
      type: 'apiKey',
      in: 'header',
      name: 'X-API-Key',
    });
  });

  it('send takes Idempotency-Key (at most 191) and answers Idempotent-Replayed on 201', () => {
    const parameters = doc.components.parameters as Record<string, Json>;
    expect(MAX_IDEMPOTENCY_KEY_LENGTH).toBe(191);
    expect(parameters.IdempotencyKey).toMatchObject({
      name: 'Idempotency-Key',
      in: 'header',
      required: false,
      schema: { type: 'string', maxLength: 191 },
    });
    expect(operation('send').parameters).toContainEqual({ $ref: '#/components/parameters/IdempotencyKey' });
    expect(operation('send').responses['201']!.headers).toEqual({
      'Idempotent-Replayed': { $ref: '#/components/headers/IdempotentReplayed' },
    });
  });

  it('Retry-After on every 429 that includes rate_limited, and on no other response', () => {
    for (const name of Object.keys(OPENAPI_PATHS) as OperationName[]) {
      for (const [status, response] of Object.entries(operation(name).responses)) {
        const headers = response.headers as Json | undefined;
        if (status === '429')
          expect(headers).toEqual({ 'Retry-After': { $ref: '#/components/headers/RetryAfter' } });
        else expect(headers?.['Retry-After']).toBeUndefined();
      }
    }
    expect((doc.components.headers as Record<string, Json>).RetryAfter!.schema).toEqual({
      type: 'integer',
      minimum: 1,
    });
  });

  it('send and check take form-encoded and JSON bodies; path parameters as the spec names them', () => {
    for (const name of ['send', 'check'] as const) {
      const content = (operation(name).requestBody as { content: Json }).content;
      expect(Object.keys(content).sort()).toEqual(['application/json', 'application/x-www-form-urlencoded']);
    }
    const parameters = doc.components.parameters as Record<string, Json>;
    expect(parameters.ServiceSid).toMatchObject({ name: 'ServiceSid', in: 'path', required: true });
    expect(parameters.VerificationSid).toMatchObject({ name: 'VerificationSid', in: 'path', required: true });
    const schemas = doc.components.schemas as Record<string, { required?: string[]; properties: Json }>;
    expect(schemas.SendParams!.required).toEqual(['To']);
    expect(Object.keys(schemas.SendParams!.properties).sort()).toEqual([
      'Code',
      'RiskCheck',
      'TemplateSid',
      'To',
    ]);
    expect(schemas.CheckParams!.required!.sort()).toEqual(['Code', 'VerificationSid']);
  });

  it('the check: 200 VERIFIED, 422 PENDING, 409 LOCKED/EXPIRED/VERIFIED or the client_code error', () => {
    const statuses = (status: string): unknown[] => {
      const found: unknown[] = [];
      const walk = (node: unknown) => {
        if (typeof node !== 'object' || node === null) return;
        const status = ((node as Json).properties as Json | undefined)?.status as
          { enum?: unknown[] } | undefined;
        if (status?.enum) found.push(...status.enum);
        Object.values(node).forEach(walk);
      };
      walk(operation('check').responses[status]);
      return found.sort();
    };
    expect(statuses('200')).toEqual(['VERIFIED']);
    expect(statuses('422')).toEqual(['PENDING']);
    expect(statuses('409')).toEqual(['EXPIRED', 'LOCKED', 'VERIFIED']);
    expect(codesAt('check', 409)).toEqual(['client_code']);
  });
});
