/**
 * The construct's dashboard and the alarms on the World's own EMF metrics
 * (src/cdk/observability.ts), and the tracing option, on the synthesized template.
 */

import { App, Stack } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import { EveWorldAws } from '../../../src/cdk/eve-world-aws.js';
import { METRICS } from '../../../src/telemetry/metrics.js';
import { ensureWorkerBundle, fakeEveApp, makeStack, tempDir } from '../../helpers/cdk.js';

let template: Template;
let construct: EveWorldAws;
let stack: Stack;

beforeAll(async () => {
  await ensureWorkerBundle();
  ({ stack, construct } = makeStack());
  template = Template.fromStack(stack);
}, 120_000); // synthesis with asset staging: seconds, more on a loaded machine

/** The dashboard body with CloudFormation intrinsics (Fn::Join) flattened to text. */
function dashboardBody(t: Template): string {
  const [dash] = Object.values(t.findResources('AWS::CloudWatch::Dashboard')) as any[];
  const body = dash.Properties.DashboardBody;
  const flat = (v: any): string =>
    typeof v === 'string' ? v : v['Fn::Join'] ? v['Fn::Join'][1].map(flat).join('') : JSON.stringify(v);
  return flat(body);
}

describe('EveWorldAws: observability', () => {
  it('alarms on dead-letters, breaker opens and sustained throttling, on the World metrics of this queue', () => {
    const queueName = { 'Fn::GetAtt': [stack.getLogicalId(construct.queue.node.defaultChild as never), 'QueueName'] };
    for (const [name, threshold, periods] of [
      ['DeliveriesDeadLettered', 1, 1],
      ['BreakerOpens', 1, 1],
      ['Throttles', 10, 3],
    ] as const) {
      expect(Object.keys(METRICS)).toContain(name);
      template.hasResourceProperties('AWS::CloudWatch::Alarm', {
        Namespace: 'EveWorldAws',
        MetricName: name,
        Dimensions: [{ Name: 'Queue', Value: queueName }],
        Statistic: 'Sum',
        Threshold: threshold,
        EvaluationPeriods: periods,
        TreatMissingData: 'notBreaching',
      });
    }
  });

  it('has a dashboard with runs, steps/s, latency percentiles, queue and DLQ depth, worker health and stream traffic', () => {
    template.resourceCountIs('AWS::CloudWatch::Dashboard', 1);
    const body = dashboardBody(template);
    for (const title of [
      'Runs started / completed / failed',
      'Steps per second',
      'Delivery latency, enqueue to handled (ms)',
      'Queue depth and oldest message (s)',
      'Dead-letter queue',
      'Worker errors, throttles, breaker',
      'Worker and host duration (ms)',
      'Streams, S3, KMS, slot bumps',
    ])
      expect(body).toContain(`"title":"${title}"`);
    for (const m of [
      'RunsStarted',
      'RunsCompleted',
      'RunsFailed',
      'StepsCompleted',
      'DeliveryLatency',
      'BreakerOpens',
      'StreamBytes',
    ])
      expect(body).toContain(`"EveWorldAws","${m}"`);
    expect(body).toContain('"stat":"p99"');
    expect(body).toContain('"stat":"p50"');
    expect(body).toContain('ApproximateAgeOfOldestMessage');
    expect(body).toContain('"AWS/Lambda","Throttles"');
    // Every World metric the dashboard names is one the World writes.
    const named = [...body.matchAll(/"EveWorldAws","(\w+)"/g)].map((m) => m[1]);
    expect(named.filter((n) => !(n in METRICS))).toEqual([]);
  });

  it('tracing: X-Ray active tracing and the ADOT layer on the worker when asked, off by default', {
    timeout: 120_000,
  }, () => {
    template.hasResourceProperties('AWS::Lambda::Function', {
      Handler: 'index.handler',
      TracingConfig: Match.absent(),
    });
    const app = new App({ outdir: tempDir('cdk-out-') });
    const s = new Stack(app, 'Traced', { env: { account: '123456789012', region: 'eu-west-1' } });
    const layer = 'arn:aws:lambda:eu-west-1:901920570463:layer:aws-otel-nodejs-arm64-ver-1-30-2:1';
    new EveWorldAws(s, 'Eve', { app: fakeEveApp(), tracing: { xray: true, adotLayerArn: layer }, dashboard: false });
    const t = Template.fromStack(s);
    t.hasResourceProperties('AWS::Lambda::Function', {
      Handler: 'index.handler',
      TracingConfig: { Mode: 'Active' },
      Layers: [layer],
      Environment: { Variables: Match.objectLike({ AWS_LAMBDA_EXEC_WRAPPER: '/opt/otel-instrument' }) },
    });
    t.resourceCountIs('AWS::CloudWatch::Dashboard', 0);
  });
});
