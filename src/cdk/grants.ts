/**
 * IAM grants for the construct, generated from the command table (src/provision/iam-actions.ts): the
 * same rows `init --print-iam-policy` prints, bound to the stack's resource ARNs.
 */
import type { Stack } from 'aws-cdk-lib';
import type { IGrantable } from 'aws-cdk-lib/aws-iam';
import { PolicyStatement } from 'aws-cdk-lib/aws-iam';
import {
  actionsByResource,
  GRANT_ACTIONS,
  GRANT_CONDITION,
  type IamPrincipal,
  type IamResource,
  PASS_ROLE_CONDITION,
} from '../provision/iam-actions.js';

/**
 * Grant `principal`'s rows of the table on the given ARNs. Resources without ARNs are skipped (no
 * KMS key: no KMS grants). `iam:PassRole` carries its PassedToService condition and
 * `kms:CreateGrant` its own statement limited to AWS resources, as in the printed policies.
 */
export function grantFromTable(
  grantee: IGrantable,
  principal: IamPrincipal,
  arns: Partial<Record<IamResource, string[]>>,
): void {
  for (const [resource, actions] of actionsByResource(principal)) {
    const resources = arns[resource];
    if (!resources || resources.length === 0) continue;
    const plain = actions.filter((a) => !GRANT_ACTIONS.includes(a));
    const grants = actions.filter((a) => GRANT_ACTIONS.includes(a));
    if (plain.length > 0) {
      grantee.grantPrincipal.addToPrincipalPolicy(
        new PolicyStatement({
          actions: plain,
          resources,
          conditions: resource === 'schedulerRole' ? structuredClone(PASS_ROLE_CONDITION) : undefined,
        }),
      );
    }
    if (grants.length > 0) {
      grantee.grantPrincipal.addToPrincipalPolicy(
        new PolicyStatement({ actions: grants, resources, conditions: structuredClone(GRANT_CONDITION) }),
      );
    }
  }
}

/**
 * How cdk-nag names a resource in an IAM5 finding (`Resource::<Table.Arn>/index/*`): the resolved
 * value with `Ref` as `<Name>`, `Fn::GetAtt` as `<Name.Attr>` and `Fn::Join` concatenated. Used to
 * acknowledge exactly the wildcard findings this construct expects, whatever the stack's env.
 */
export function nagResourceName(stack: Stack, value: string): string {
  const render = (v: unknown): string => {
    if (typeof v === 'string') return v;
    if (v && typeof v === 'object') {
      const o = v as Record<string, unknown>;
      if ('Ref' in o) return `<${String(o.Ref)}>`;
      if ('Fn::GetAtt' in o) return `<${(o['Fn::GetAtt'] as string[]).join('.')}>`;
      if ('Fn::Join' in o) {
        const [sep, parts] = o['Fn::Join'] as [string, unknown[]];
        return parts.map(render).join(sep);
      }
    }
    return JSON.stringify(v);
  };
  return render(stack.resolve(value));
}
