/**
 * Each function's log group and role: the role starts with nothing but writing to that log group;
 * what the function may do with the World's resources is granted from the command table
 * (./grants.ts).
 */
import { RemovalPolicy } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as logs from 'aws-cdk-lib/aws-logs';
import type { Construct } from 'constructs';

/** `<name>Logs` and `<name>Role` in `scope`. */
export function addFunctionBase(scope: Construct, name: string, retention: logs.RetentionDays | undefined) {
  const logGroup = new logs.LogGroup(scope, `${name}Logs`, {
    retention: retention ?? logs.RetentionDays.ONE_MONTH,
    removalPolicy: RemovalPolicy.DESTROY,
  });
  const role = new iam.Role(scope, `${name}Role`, { assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com') });
  role.addToPolicy(
    new iam.PolicyStatement({
      actions: ['logs:CreateLogStream', 'logs:PutLogEvents'],
      resources: [logGroup.logGroupArn],
    }),
  );
  return { logGroup, role };
}
