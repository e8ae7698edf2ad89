/**
 * The error a start gets in a process whose own deployment is retired (src/deployment/membership.ts):
 * a run started there would be pinned to a deployment whose messages every consumer fails, so no
 * run is created and no message sent. Exported from the package, so an app can tell it apart.
 */
export class DeploymentRetiredError extends Error {
  override readonly name = 'DeploymentRetiredError';
  constructor(readonly deploymentId: string) {
    super(
      `deployment ${deploymentId} is retired (\`eve-world-aws deployments retire\`): this process may not start runs. ` +
        'Stop it and serve a new build, which registers a new deployment (docs/operations.md, "Deployment affinity").',
    );
  }
}
