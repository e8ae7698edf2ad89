/**
 * The one error that tells core a deployment cannot receive a message (`@workflow/world`'s
 * `Queue.isDeploymentUnavailableError`): core's deployment guard then fails the run with
 * `DEPLOYMENT_MISMATCH` at once instead of re-routing it again.
 *
 * Invariant: only a definitive answer is this error (the registry says the deployment is retired,
 * or it was never registered); a registry or SQS error that may pass is a plain error, so core
 * rethrows it and the message is delivered again (core's deployment guard).
 */
export class DeploymentUnavailableError extends Error {
  override readonly name = 'DeploymentUnavailableError';
  constructor(
    readonly deploymentId: string,
    readonly why: 'retired' | 'unknown',
  ) {
    super(
      why === 'retired'
        ? `deployment ${deploymentId} is retired: its runs cannot continue (docs/operations.md, "Deployment affinity")`
        : `deployment ${deploymentId} is not registered on this table: no consumer serves it (docs/operations.md, "Deployment affinity")`,
    );
  }
}

/**
 * The World's `isDeploymentUnavailableError`. An arrow without `this`: core calls it unbound
 * (the runtime passes `world.isDeploymentUnavailableError` on as a plain function).
 */
export const isDeploymentUnavailableError = (error: unknown): boolean =>
  error instanceof DeploymentUnavailableError ||
  (typeof error === 'object' && error !== null && (error as { name?: unknown }).name === 'DeploymentUnavailableError');
