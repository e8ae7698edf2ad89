/**
 * `@portfolio/eve-world-aws/cdk`: the CDK construct for an eve agent on AWS Lambda.
 * `aws-cdk-lib` and `constructs` are optional peer dependencies: install them in the CDK app.
 */

export {
  type HostDockerfileOptions,
  hostDockerfile,
  LAMBDA_ADAPTER_IMAGE,
  NODE_BASE_IMAGE,
  READINESS_PATH,
} from './dockerfile.js';
export { EveWorldAws, type EveWorldAwsProps, FLOW_PATH } from './eve-world-aws.js';
export { grantFromTable } from './grants.js';
