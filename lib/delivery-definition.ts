/**
 * The substitutions the delivery state machine file (statemachine/delivery.asl.json) needs besides the task
 * functions' ARNs, shared by the CDK construct and the local runner: its status read (Step Functions' own
 * DynamoDB GetItem) builds the verification's key with `States.Format` from a template made here from
 * `keys.verification`, so the key's format has one source (functions/adapters/dynamodb/keys.ts).
 */
import { TABLE_SCHEMA, keys } from '../functions/adapters/dynamodb/keys';

export interface VerificationKeySubstitutions {
  /** `States.Format` template of the verification's partition key, `{}` standing for the SID. */
  VerificationPartitionKeyFormat: string;
  VerificationSortKey: string;
}

const SID = '\u0000';
// Characters States.Format would take as syntax, or that would need escaping inside the definition's JSON.
const UNSAFE = /['{}\\"]/;

export function verificationKeySubstitutions(): VerificationKeySubstitutions {
  // The ASL names the key attributes itself (Key.pk, Key.sk).
  if (TABLE_SCHEMA.partitionKey !== 'pk' || TABLE_SCHEMA.sortKey !== 'sk') {
    throw new Error('statemachine/delivery.asl.json reads the key attributes pk and sk: update its Key');
  }
  const key = keys.verification(SID);
  const parts = key.pk.split(SID);
  if (parts.length !== 2 || key.sk.includes(SID) || [...parts, key.sk].some((part) => UNSAFE.test(part))) {
    throw new Error(`The verification key ${JSON.stringify(key)} cannot be built with States.Format`);
  }
  return { VerificationPartitionKeyFormat: parts.join('{}'), VerificationSortKey: key.sk };
}
