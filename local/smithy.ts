/**
 * Checks a request against an AWS service's Smithy model (its JSON AST, as AWS publishes it), as the
 * service checks it before doing anything: required members, `@length`, `@pattern`, `@range`, enums, lists,
 * maps, blobs, and the JSON type of each value. The messages follow the wording AWS services answer with
 * ("1 validation error detected: Value at '…' failed to satisfy constraint: Member must …"), a sensitive
 * member's value never quoted. Unknown members are ignored, as AWS's JSON protocols ignore them.
 *
 * This reads only the model: never anything of our adapters', so it judges them rather than repeating them.
 */
import { readFileSync } from 'node:fs';
import * as path from 'node:path';

interface Traits {
  'smithy.api#required'?: object;
  'smithy.api#length'?: { min?: number; max?: number };
  'smithy.api#range'?: { min?: number; max?: number };
  'smithy.api#pattern'?: string;
  'smithy.api#enum'?: { value: string }[];
  'smithy.api#sensitive'?: object;
  [trait: string]: unknown;
}

interface MemberRef {
  target: string;
  traits?: Traits;
}

interface Shape {
  type: string;
  members?: Record<string, MemberRef>;
  member?: MemberRef;
  key?: MemberRef;
  value?: MemberRef;
  input?: { target: string };
  traits?: Traits;
}

export interface SmithyModel {
  smithy: string;
  shapes: Record<string, Shape>;
}

/** One failed constraint: the member's path (`/Context/key`) and the sentence AWS would say of it. */
export interface ValidationIssue {
  path: string;
  message: string;
}

/**
 * Where the models are looked for, in order: `OTP_AWS_MODELS_DIR`, `aws-models/` in the shared folder beside the
 * repository, and test/fixtures/aws-models/ (whose README says where they come from and why they are kept
 * outside the repository for now).
 */
const modelDirectories = (): string[] =>
  [
    process.env.OTP_AWS_MODELS_DIR,
    path.join(__dirname, '..', '..', 'shared', 'aws-models'),
    path.join(__dirname, '..', 'test', 'fixtures', 'aws-models'),
  ].filter((dir): dir is string => dir !== undefined && dir !== '');

const cache = new Map<string, SmithyModel>();

/** A service model by its file name (`pinpoint-sms-voice-v2`, `socialmessaging`), read once. */
export function loadModel(name: string): SmithyModel {
  const model = findModel(name);
  if (model) return model;
  throw new Error(
    `The AWS service model ${name}.json is in none of ${modelDirectories().join(', ')}: ` +
      'see test/fixtures/aws-models/README.md',
  );
}

/** The model, or undefined when no directory has it. */
export function findModel(name: string): SmithyModel | undefined {
  const known = cache.get(name);
  if (known) return known;
  for (const dir of modelDirectories()) {
    let text: string;
    try {
      text = readFileSync(path.join(dir, `${name}.json`), 'utf8');
    } catch {
      continue;
    }
    const model = JSON.parse(text) as SmithyModel;
    cache.set(name, model);
    return model;
  }
  return undefined;
}

/** The prelude's simple shapes (`smithy.api#String`…): no constraint but their type. */
const PRELUDE: Record<string, string> = {
  'smithy.api#String': 'string',
  'smithy.api#Boolean': 'boolean',
  'smithy.api#PrimitiveBoolean': 'boolean',
  'smithy.api#Integer': 'integer',
  'smithy.api#PrimitiveInteger': 'integer',
  'smithy.api#Long': 'long',
  'smithy.api#PrimitiveLong': 'long',
  'smithy.api#Blob': 'blob',
  'smithy.api#Timestamp': 'timestamp',
  'smithy.api#Document': 'document',
};

const INTEGER_BOUNDS: Record<string, [number, number]> = {
  byte: [-128, 127],
  short: [-32_768, 32_767],
  integer: [-2_147_483_648, 2_147_483_647],
  long: [Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER],
};

export class SmithyValidator {
  constructor(readonly model: SmithyModel) {}

  /** The input structure of an operation (`com.amazonaws.pinpointsmsvoicev2#SendTextMessage`). */
  inputOf(operation: string): string {
    const target = this.shape(operation).input?.target;
    if (!target) throw new Error(`${operation} has no input`);
    return target;
  }

  /** Every failed constraint of `value` as the structure `shapeId`, in member order. */
  validate(shapeId: string, value: unknown): ValidationIssue[] {
    const issues: ValidationIssue[] = [];
    this.check(shapeId, value, '', {}, issues);
    return issues;
  }

  /** The message AWS answers with for these issues (`N validation errors detected: …; …`). */
  static message(issues: ValidationIssue[]): string {
    const count = `${issues.length} validation error${issues.length === 1 ? '' : 's'} detected`;
    return `${count}: ${issues.map((issue) => issue.message).join('; ')}`;
  }

  private shape(id: string): Shape {
    const shape = this.model.shapes[id];
    if (shape) return shape;
    const prelude = PRELUDE[id];
    if (prelude) return { type: prelude };
    throw new Error(`The model has no shape ${id}`);
  }

  /** `memberTraits`: the member's own traits, which apply with (and before) its target's. */
  private check(
    shapeId: string,
    value: unknown,
    at: string,
    memberTraits: Traits,
    issues: ValidationIssue[],
  ): void {
    const shape = this.shape(shapeId);
    const traits: Traits = { ...shape.traits, ...memberTraits };
    const sensitive = traits['smithy.api#sensitive'] !== undefined;
    const fail = (constraint: string) =>
      issues.push({
        path: at,
        message: `Value ${sensitive ? '' : `${quote(value)} `}at '${at}' failed to satisfy constraint: Member must ${constraint}`,
      });
    switch (shape.type) {
      case 'structure': {
        if (!isObject(value)) return void fail('be a structure');
        for (const [name, member] of Object.entries(shape.members ?? {})) {
          const memberValue = value[name];
          const memberAt = `${at}/${name}`;
          if (memberValue === undefined || memberValue === null) {
            if (member.traits?.['smithy.api#required'] !== undefined)
              issues.push({
                path: memberAt,
                message: `Value null at '${memberAt}' failed to satisfy constraint: Member must not be null`,
              });
            continue;
          }
          this.check(member.target, memberValue, memberAt, member.traits ?? {}, issues);
        }
        return;
      }
      case 'union': {
        if (!isObject(value)) return void fail('be a union');
        const set = Object.entries(shape.members ?? {}).filter(([name]) => value[name] != null);
        if (set.length !== 1) return void fail('have exactly one member set');
        const [name, member] = set[0]!;
        return this.check(member.target, value[name], `${at}/${name}`, member.traits ?? {}, issues);
      }
      case 'list':
      case 'set': {
        if (!Array.isArray(value)) return void fail('be a list');
        if (!this.length(traits, value.length, fail)) return;
        value.forEach((item, index) => this.check(shape.member!.target, item, `${at}/${index}`, {}, issues));
        return;
      }
      case 'map': {
        if (!isObject(value)) return void fail('be a map');
        const entries = Object.entries(value);
        if (!this.length(traits, entries.length, fail)) return;
        for (const [key, item] of entries) {
          this.check(shape.key!.target, key, `${at}/${key}`, {}, issues);
          this.check(shape.value!.target, item, `${at}/${key}`, {}, issues);
        }
        return;
      }
      case 'string':
      case 'enum': {
        if (typeof value !== 'string') return void fail('be a string');
        const values =
          shape.type === 'enum'
            ? Object.entries(shape.members ?? {}).map(
                ([name, member]) => (member.traits?.['smithy.api#enumValue'] as string | undefined) ?? name,
              )
            : traits['smithy.api#enum']?.map((entry) => entry.value);
        if (values && !values.includes(value))
          return void fail(`satisfy enum value set: [${values.join(', ')}]`);
        // Smithy counts a string's length in Unicode scalar values, not UTF-16 units.
        if (!this.length(traits, [...value].length, fail)) return;
        const pattern = traits['smithy.api#pattern'];
        // Smithy patterns are ECMA-262 and not implicitly anchored; `u` for the scalar-value semantics.
        if (pattern !== undefined && !new RegExp(pattern, 'u').test(value))
          fail(`satisfy regular expression pattern: ${pattern}`);
        return;
      }
      case 'blob': {
        // JSON protocols carry a blob as base64; its length is the decoded bytes'.
        if (typeof value !== 'string' || !/^[A-Za-z0-9+/]*={0,2}$/.test(value) || value.length % 4 !== 0)
          return void fail('be base64-encoded binary data');
        this.length(traits, Buffer.from(value, 'base64').length, fail);
        return;
      }
      case 'boolean':
        if (typeof value !== 'boolean') fail('be a boolean');
        return;
      case 'byte':
      case 'short':
      case 'integer':
      case 'long': {
        const [min, max] = INTEGER_BOUNDS[shape.type]!;
        if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max)
          return void fail(`be a${shape.type === 'integer' ? 'n' : ''} ${shape.type}`);
        this.range(traits, value, fail);
        return;
      }
      case 'float':
      case 'double':
      case 'bigDecimal':
      case 'bigInteger':
        if (typeof value !== 'number') return void fail('be a number');
        this.range(traits, value, fail);
        return;
      case 'timestamp':
        if (typeof value !== 'number' && typeof value !== 'string') fail('be a timestamp');
        return;
      case 'document':
        return;
      default:
        throw new Error(`Shapes of type ${shape.type} are not checked (${shapeId})`);
    }
  }

  /** `@length`: false when it fails (the rest of the value is not looked at, as AWS reports one per member). */
  private length(traits: Traits, length: number, fail: (constraint: string) => void): boolean {
    const bounds = traits['smithy.api#length'];
    if (!bounds) return true;
    if (bounds.min !== undefined && length < bounds.min) {
      fail(`have length greater than or equal to ${bounds.min}`);
      return false;
    }
    if (bounds.max !== undefined && length > bounds.max) {
      fail(`have length less than or equal to ${bounds.max}`);
      return false;
    }
    return true;
  }

  private range(traits: Traits, value: number, fail: (constraint: string) => void): void {
    const bounds = traits['smithy.api#range'];
    if (bounds?.min !== undefined && value < bounds.min)
      fail(`have value greater than or equal to ${bounds.min}`);
    else if (bounds?.max !== undefined && value > bounds.max)
      fail(`have value less than or equal to ${bounds.max}`);
  }
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

const quote = (value: unknown): string => (typeof value === 'string' ? `'${value}'` : JSON.stringify(value));
