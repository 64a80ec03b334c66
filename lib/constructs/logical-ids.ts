/**
 * Logical ids that do not depend on how the stack's code is grouped. The constructs of lib/constructs/ that
 * extend `Grouping` group code, not addresses: the resources inside keep the logical ids they had when they were
 * created directly in the stack. A new logical id makes CloudFormation replace a resource: the table and the key
 * secrets would lose their data, the HTTP API its URL, the named state-machine log group would collide with
 * itself, a route or stage with its old self. The template tests pin the stateful ones.
 */
import { createHash } from 'node:crypto';
import { Construct, type IConstruct } from 'constructs';
import type { CfnElement } from 'aws-cdk-lib';

/** A construct whose id is left out of its resources' logical ids (see the module comment). */
export class Grouping extends Construct {}

/**
 * CDK's own scheme (`makeUniqueId` of aws-cdk-lib, copied: it is not exported) over the element's path from its
 * stack, without the `Grouping` constructs: the human part of the path (no `Resource`, no `Default`) and an
 * 8-character hash of the whole path.
 */
export function groupedLogicalId(element: CfnElement): string {
  const scopes: IConstruct[] = element.node.scopes;
  const components = scopes
    .slice(scopes.indexOf(element.stack) + 1)
    .filter((scope) => !(scope instanceof Grouping))
    .map((scope) => scope.node.id)
    .filter((id) => id !== 'Default');
  const alphanumeric = (s: string) => s.replace(/[^A-Za-z0-9]/g, '');
  if (components.length === 1 && alphanumeric(components[0]!).length <= 255)
    return alphanumeric(components[0]!);
  const hash = createHash('md5').update(components.join('/')).digest('hex').slice(0, 8).toUpperCase();
  const human: string[] = [];
  for (const component of components) {
    if (human.length === 0 || !human[human.length - 1]!.endsWith(component)) human.push(component);
  }
  return (
    human
      .filter((id) => id !== 'Resource')
      .map(alphanumeric)
      .join('')
      .slice(0, 240) + hash
  );
}
