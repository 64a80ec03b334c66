/**
 * IAM as the provider simulator applies it: the calling function's identity-based statements (the synthesized
 * template's, never written by hand) decide each AWS request, by action and by every resource ARN the request
 * names, as IAM does: allowed only if some Allow statement matches the action and the resource, and no Deny does.
 *
 * Which resources a request names, and their ARN formats, come from the Service Authorization Reference
 * (docs.aws.amazon.com/service-authorization/latest/reference/: list_amazonpinpointsmsvoicev2.html for
 * `sms-voice`, list_awsendusermessagingsocial.html for `social-messaging`):
 *
 * - sms-voice:SendTextMessage — resource types configuration-set, phone-number, pool, protect-configuration,
 *   sender-id: `arn:${Partition}:sms-voice:${Region}:${Account}:pool/${PoolId}`, `…:phone-number/${PhoneNumberId}`,
 *   `…:sender-id/${SenderId}/${IsoCountryCode}`, `…:configuration-set/${ConfigurationSetName}`,
 *   `…:protect-configuration/${ProtectConfigurationId}`. An RCS agent (`…:rcs-agent/${RcsAgentId}`) is checked
 *   here too, though the reference read did not list it for this action: stricter than AWS at worst.
 * - social-messaging:SendWhatsAppMessage, GetLinkedWhatsAppBusinessAccountPhoneNumber — resource type
 *   phone-number-id: `arn:${Partition}:social-messaging:${Region}:${Account}:phone-number-id/${OriginationPhoneNumberId}`.
 *   The id in the ARN is the phone number id without its `phone-number-id-` prefix: the service model's ARN
 *   pattern (`arn:.*:phone-number-id/[0-9a-zA-Z]+`) admits no hyphen, and the ARNs AWS puts in its own events
 *   (`MetaPhoneNumberIds[].arn`) carry the bare 32 hex digits.
 */
export interface IamStatement {
  effect: 'Allow' | 'Deny';
  actions: string[];
  resources: string[];
}

/** Where the simulated account lives: the ARNs of resources named by id. */
export interface IamScope {
  partition: string;
  region: string;
  account: string;
}

export type Authorization = { allowed: true } | { allowed: false; resource: string };

/** IAM's wildcard match (`*` any run, `?` one character), case-sensitive as for resources. */
function wildcard(pattern: string, value: string, ignoreCase = false): boolean {
  const source = pattern
    .replace(/[.+^${}()|[\]\\]/g, '\\$&')
    .replace(/\*/g, '.*')
    .replace(/\?/g, '.');
  return new RegExp(`^${source}$`, ignoreCase ? 'i' : '').test(value);
}

/** Whether `statements` allow `action` on every one of `resources` (IAM: action names are case-insensitive). */
export function authorize(statements: IamStatement[], action: string, resources: string[]): Authorization {
  for (const resource of resources) {
    const matches = (statement: IamStatement) =>
      statement.actions.some((pattern) => wildcard(pattern, action, true)) &&
      statement.resources.some((pattern) => wildcard(pattern, resource));
    const denied = statements.some((statement) => statement.effect === 'Deny' && matches(statement));
    const allowed = statements.some((statement) => statement.effect === 'Allow' && matches(statement));
    if (denied || !allowed) return { allowed: false, resource };
  }
  return { allowed: true };
}

const arn = (scope: IamScope, service: string, resource: string) =>
  `arn:${scope.partition}:${service}:${scope.region}:${scope.account}:${resource}`;

/** The resources a SendTextMessage request names, as IAM sees them. */
export function sendTextMessageResources(
  scope: IamScope,
  input: {
    OriginationIdentity?: string;
    ConfigurationSetName?: string;
    ProtectConfigurationId?: string;
    DestinationCountry?: string;
  },
): string[] {
  const resources: string[] = [];
  const identity = input.OriginationIdentity;
  if (identity !== undefined) {
    if (identity.startsWith('arn:')) resources.push(identity);
    else if (identity.startsWith('pool-')) resources.push(arn(scope, 'sms-voice', `pool/${identity}`));
    else if (identity.startsWith('phone-number-'))
      resources.push(arn(scope, 'sms-voice', `phone-number/${identity}`));
    else if (identity.startsWith('rcs-agent-'))
      resources.push(arn(scope, 'sms-voice', `rcs-agent/${identity}`));
    // A phone number in E.164 is authorized as the phone-number resource AWS holds it under; the simulator holds
    // none, so it has no ARN: no grant can name it, as for an unknown number on AWS.
    else if (!identity.startsWith('+'))
      resources.push(arn(scope, 'sms-voice', `sender-id/${identity}/${input.DestinationCountry ?? 'XX'}`));
  }
  const set = input.ConfigurationSetName;
  if (set !== undefined)
    resources.push(set.startsWith('arn:') ? set : arn(scope, 'sms-voice', `configuration-set/${set}`));
  const protect = input.ProtectConfigurationId;
  if (protect !== undefined)
    resources.push(
      protect.startsWith('arn:') ? protect : arn(scope, 'sms-voice', `protect-configuration/${protect}`),
    );
  return resources;
}

/** The phone-number-id resource of a WhatsApp phone number id or ARN. */
export function whatsAppPhoneNumberResource(scope: IamScope, idOrArn: string): string {
  if (idOrArn.startsWith('arn:')) return idOrArn;
  return arn(scope, 'social-messaging', `phone-number-id/${idOrArn.replace(/^phone-number-id-/, '')}`);
}

/**
 * The statements of one role in a synthesized template (`cdk synth` JSON): every AWS::IAM::Policy attached to
 * the role, with literal ARNs (a stack synthesized for a concrete account and region; `AWS::Partition` and
 * `AWS::URLSuffix` are resolved, anything else left unresolved matches nothing).
 */
export function roleStatements(
  template: { Resources: Record<string, { Type: string; Properties: Record<string, unknown> }> },
  roleLogicalId: string,
  scope: IamScope,
): IamStatement[] {
  const statements: IamStatement[] = [];
  for (const resource of Object.values(template.Resources)) {
    if (resource.Type !== 'AWS::IAM::Policy') continue;
    const roles = resource.Properties.Roles as { Ref?: string }[];
    if (!roles.some((role) => role.Ref === roleLogicalId)) continue;
    const document = resource.Properties.PolicyDocument as {
      Statement: { Effect: 'Allow' | 'Deny'; Action: string | string[]; Resource: unknown }[];
    };
    for (const statement of document.Statement)
      statements.push({
        effect: statement.Effect,
        actions: [statement.Action].flat(),
        resources: [statement.Resource].flat().map((value) => resolve(value, scope)),
      });
  }
  return statements;
}

function resolve(value: unknown, scope: IamScope): string {
  if (typeof value === 'string') return value;
  const object = value as Record<string, unknown>;
  if (object.Ref === 'AWS::Partition') return scope.partition;
  if (object.Ref === 'AWS::Region') return scope.region;
  if (object.Ref === 'AWS::AccountId') return scope.account;
  if (object.Ref === 'AWS::URLSuffix') return 'amazonaws.com';
  const join = object['Fn::Join'] as [string, unknown[]] | undefined;
  if (join) return join[1].map((part) => resolve(part, scope)).join(join[0]);
  return `unresolved:${JSON.stringify(value)}`;
}
