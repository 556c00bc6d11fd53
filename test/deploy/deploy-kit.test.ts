/**
 * The deployment kit in deploy/ (docs/deployment.md): the dashboard and the alert rules query only metrics the
 * gateway exports (read from a running gateway's /metrics), the Kubernetes manifests pass the Kubernetes JSON schemas
 * (the kubernetes-models package carries them) and agree with each other and with deploy/config.yaml, and that
 * config loads in production from secret files. .ci/run also checks compose.yaml with `docker-compose config` and
 * runs `promtool test rules`.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Deployment } from 'kubernetes-models/apps/v1';
import { CronJob, Job } from 'kubernetes-models/batch/v1';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1';
import { ConfigMap, Service } from 'kubernetes-models/v1';
import YAML from 'yaml';
import { parseConfig } from '../../src/config/load.js';
import { findUnsafeSettings } from '../../src/config/production-checks.js';
import { startTestGateway, TEST_ADMIN_KEY, type TestGateway } from '../helpers/gateway.js';
import { parsePrometheusText } from '../helpers/prometheus.js';

const DEPLOY = new URL('../../deploy/', import.meta.url);
const read = (path: string) => readFileSync(new URL(path, DEPLOY), 'utf8');

/** PromQL words that are not metric names: functions, aggregations, keywords. */
const PROMQL_WORDS = new Set([
  'sum',
  'max',
  'min',
  'avg',
  'count',
  'rate',
  'increase',
  'irate',
  'histogram_quantile',
  'by',
  'without',
  'and',
  'or',
  'unless',
  'on',
  'ignoring',
  'group_left',
  'group_right',
  'bool',
  'offset',
  'label_values',
  'abs',
  'clamp_min',
  'time',
]);

/**
 * The metric names a PromQL expression reads: label matchers, grouping lists, ranges, strings and numbers removed,
 * whatever identifier is left that is not a PromQL word. Grafana's `$variables` are removed first.
 */
export function metricNamesIn(expr: string): string[] {
  const bare = expr
    .replace(/"(?:[^"\\]|\\.)*"/g, '""')
    .replace(/\$\{?\w+\}?/g, ' ')
    .replace(/\{[^}]*\}/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ')
    .replace(/\b(by|without|on|ignoring)\s*\([^)]*\)/g, ' ')
    .replace(/\b\d+(\.\d+)?(e[+-]?\d+)?\b/gi, ' ');
  const words = bare.match(/[A-Za-z_:][A-Za-z0-9_:]*/g) ?? [];
  return [...new Set(words.filter((w) => !PROMQL_WORDS.has(w)))];
}

function dashboardExpressions(): string[] {
  const dashboard = JSON.parse(read('grafana/dashboards/crm-sms-gateway.json')) as {
    panels: Array<{ targets?: Array<{ expr: string }> }>;
    templating: { list: Array<{ definition?: string }> };
  };
  return [
    ...dashboard.panels.flatMap((p) => (p.targets ?? []).map((t) => t.expr)),
    ...dashboard.templating.list.flatMap((v) => (v.definition ? [v.definition] : [])),
  ];
}

function ruleExpressions(): string[] {
  const rules = YAML.parse(read('prometheus/alerts.yml')) as { groups: Array<{ rules: Array<{ expr: string }> }> };
  return rules.groups.flatMap((g) => g.rules.map((r) => r.expr));
}

/** Prometheus' own series, not the gateway's. */
const FROM_PROMETHEUS = new Set(['up']);

describe('the dashboard and the alert rules read what the gateway exports', () => {
  let gw: TestGateway;
  let exported: Set<string>;
  beforeAll(async () => {
    gw = await startTestGateway();
    const exposition = parsePrometheusText(await (await fetch(`${gw.url}/metrics`, { headers: { authorization: `Bearer ${TEST_ADMIN_KEY}` } })).text());
    // A histogram with no observation yet has only its # TYPE line: its series names follow from the type.
    const suffixes: Record<string, string[]> = { histogram: ['_bucket', '_sum', '_count'], summary: ['', '_sum', '_count'] };
    exported = new Set(exposition.samples.map((s) => s.name));
    for (const [name, type] of exposition.types) for (const suffix of suffixes[type] ?? ['']) exported.add(name + suffix);
  });
  afterAll(async () => gw?.close());

  it('reads the names out of PromQL, and would catch a name the gateway does not have', () => {
    expect(metricNamesIn('sum by (provider) (rate(sms_gateway_messages_sent_total{outcome!="submitted",x=~"a|b"}[5m])) / 2 > 0.2')).toEqual([
      'sms_gateway_messages_sent_total',
    ]);
    expect(metricNamesIn('histogram_quantile(0.95, sum by (le) (rate(a_seconds_bucket{p=~"$provider"}[$__rate_interval]))) and on (x) b_total')).toEqual([
      'a_seconds_bucket',
      'b_total',
    ]);
    expect(metricNamesIn('label_values(sms_gateway_messages_sent_total, provider)')).toEqual(['sms_gateway_messages_sent_total', 'provider']);
    expect(exported.has('sms_gateway_messages_sent_totals')).toBe(false);
  });

  it.each([
    ['the Grafana dashboard', dashboardExpressions],
    ['the Prometheus alert rules', ruleExpressions],
  ])('%s names only exported metrics', (_label, expressions) => {
    const exprs = expressions();
    expect(exprs.length).toBeGreaterThan(5);
    // label_values(metric, label): the label is not a metric.
    const names = exprs.flatMap((e) => metricNamesIn(e.replace(/label_values\(([^,]+),[^)]*\)/g, '$1')));
    const unknown = [...new Set(names)].filter((n) => !exported.has(n) && !FROM_PROMETHEUS.has(n));
    expect(unknown).toEqual([]);
  });

  it('shows every area the deployment guide promises', () => {
    const names = new Set(dashboardExpressions().flatMap((e) => metricNamesIn(e)));
    for (const metric of [
      'sms_gateway_messages_sent_total',
      'sms_gateway_delivery_duration_seconds_bucket',
      'sms_gateway_delivery_statuses_total',
      'sms_gateway_conversion_outbox',
      'sms_gateway_conversion_oldest_unposted_age_seconds',
      'sms_gateway_crm_events_outbox',
      'sms_gateway_crm_events_oldest_unsent_age_seconds',
      'sms_gateway_conversions_dead_lettered_total',
      'sms_gateway_crm_events_dead_lettered_total',
      'sms_gateway_route_member_circuit',
      'sms_gateway_http_auth_refusals_total',
      'sms_gateway_build_info',
    ]) {
      expect(names, metric).toContain(metric);
    }
  });
});

type Manifest = { apiVersion: string; kind: string; metadata: { name: string }; spec?: any; data?: Record<string, string> };

function manifests(): Array<{ file: string; doc: Manifest }> {
  const dir = new URL('kubernetes/', DEPLOY);
  return readdirSync(dir)
    .filter((f) => f.endsWith('.yaml'))
    .sort()
    .flatMap((file) => YAML.parseAllDocuments(readFileSync(new URL(file, dir), 'utf8')).map((d) => ({ file, doc: d.toJS() as Manifest })));
}

/** The kubernetes-models class of each kind the kit uses; another kind fails until it is added here. */
const MODELS = new Map<string, { new (data: any): { validate(): void } }>([
  ['apps/v1 Deployment', Deployment],
  ['batch/v1 Job', Job],
  ['batch/v1 CronJob', CronJob],
  ['policy/v1 PodDisruptionBudget', PodDisruptionBudget],
  ['v1 Service', Service],
  ['v1 ConfigMap', ConfigMap],
]);

async function validateManifest(doc: Manifest): Promise<void> {
  const Model = MODELS.get(`${doc.apiVersion} ${doc.kind}`);
  if (!Model) throw new Error(`no schema for ${doc.apiVersion} ${doc.kind}`);
  new Model(doc).validate();
}

const byKind = (kind: string) => manifests().find((m) => m.doc.kind === kind)!.doc;
const podSpec = (doc: Manifest) => (doc.kind === 'CronJob' ? doc.spec.jobTemplate.spec.template.spec : doc.spec.template.spec);

describe('the Kubernetes manifests', () => {
  it('pass the Kubernetes schemas, and the check refuses a manifest that does not', async () => {
    const all = manifests();
    expect(all.map((m) => m.doc.kind).sort()).toEqual(['ConfigMap', 'CronJob', 'Deployment', 'Job', 'PodDisruptionBudget', 'Service']);
    for (const { file, doc } of all) await expect(validateManifest(doc), file).resolves.toBeUndefined();
    const broken = structuredClone(byKind('Deployment'));
    broken.spec.template.spec.containers[0].readinessProbe.httpGet.port = { name: 'http' };
    await expect(validateManifest(broken)).rejects.toThrow(/readinessProbe\/httpGet\/port/);
  });

  it('carry deploy/config.yaml unchanged in the ConfigMap', () => {
    expect(byKind('ConfigMap').data!['config.yaml']).toBe(read('config.yaml'));
  });

  it('probe /readyz and /healthz, and give SIGTERM more than preStop plus server.shutdown_timeout', () => {
    const spec = podSpec(byKind('Deployment'));
    const [container] = spec.containers;
    expect(container.args).toEqual(['serve', '--no-migrate', '--config', '/etc/crm-sms-gateway/config.yaml']);
    expect(container.readinessProbe.httpGet.path).toBe('/readyz');
    expect(container.livenessProbe.httpGet.path).toBe('/healthz');
    const preStopSeconds = Number(container.lifecycle.preStop.exec.command[1]);
    const shutdownMs = loadDeployConfig().server.shutdown_timeout;
    expect(spec.terminationGracePeriodSeconds * 1000).toBeGreaterThan(preStopSeconds * 1000 + shutdownMs);
    expect(container.ports.map((p: { containerPort: number }) => p.containerPort)).toEqual([8080, loadDeployConfig().metrics.port]);
  });

  it('run migrate as a Job and flush as a CronJob, with the same image, config and secrets as the pods', () => {
    const deployment = podSpec(byKind('Deployment'));
    for (const [kind, command] of [
      ['Job', 'migrate'],
      ['CronJob', 'flush'],
    ] as const) {
      const spec = podSpec(byKind(kind));
      expect(spec.containers[0].args[0], kind).toBe(command);
      expect(spec.containers[0].image, kind).toBe(deployment.containers[0].image);
      expect(spec.volumes, kind).toEqual(deployment.volumes.filter((v: { name: string }) => v.name !== 'tmp'));
    }
    expect(byKind('CronJob').spec.concurrencyPolicy).toBe('Forbid');
  });

  it('select the Deployment’s pods from the Service and the PodDisruptionBudget', () => {
    const labels = byKind('Deployment').spec.template.metadata.labels;
    expect(labels).toMatchObject(byKind('Service').spec.selector);
    expect(labels).toMatchObject(byKind('PodDisruptionBudget').spec.selector.matchLabels);
    expect(byKind('Deployment').spec.replicas).toBeGreaterThan(byKind('PodDisruptionBudget').spec.minAvailable);
  });
});

/** deploy/config.yaml with its /run/secrets/gateway files made in a temporary folder. */
const secretDir = mkdtempSync(join(tmpdir(), 'deploy-secrets-'));
afterAll(() => rmSync(secretDir, { recursive: true, force: true }));
function loadDeployConfig() {
  const text = read('config.yaml').replaceAll('/run/secrets/gateway/', `${secretDir}/`);
  // Only the references that point into the secret folder (a comment may mention `${file:…}` too).
  for (const name of text.match(/(?<=\$\{file:)[^}]+/g)?.filter((f) => f.startsWith(`${secretDir}/`)) ?? []) {
    const value = name.endsWith('database_url')
      ? 'postgres://gateway:pw@postgres:5432/crm_sms_gateway'
      : name.endsWith('rabbitmq_url')
        ? 'amqp://gateway:pw@rabbitmq:5672'
        : `${'s'.repeat(24)}-${name.length}`;
    writeFileSync(name, `${value}\n`);
  }
  return parseConfig(YAML.parse(text), { PUBLIC_URL: 'https://sms-gateway.example.com', CRM_WEBHOOK_URL: 'https://crm.example.com' }, 'deploy/config.yaml');
}

describe('deploy/config.yaml and compose.yaml', () => {
  it('loads in production from secret files with nothing production refuses', () => {
    const config = loadDeployConfig();
    expect(config.server.environment).toBe('production');
    expect(config.database.url).toBe('postgres://gateway:pw@postgres:5432/crm_sms_gateway');
    const findings = findUnsafeSettings(config);
    expect(findings.filter((f) => f.severity !== 'warn')).toEqual([]);
    // Inside the compose network the broker is plain amqp:// and the scrape port is open to Prometheus only; both are
    // logged as warnings at start, so an operator copying this file to a shared network is told.
    expect(findings.map((f) => f.key).sort()).toEqual(['crm.integration.rabbitmq.url', 'metrics.public']);
  });

  it('has Prometheus scrape the metrics port the config sets, and serve start without migrating', () => {
    const prometheus = YAML.parse(read('prometheus/prometheus.yml'));
    expect(prometheus.scrape_configs[0].static_configs[0].targets).toEqual([`gateway:${loadDeployConfig().metrics.port}`]);
    const compose = YAML.parse(read('compose.yaml'));
    expect(compose.services.gateway.command).toContain('--no-migrate');
    expect(compose.services.gateway.depends_on.migrate.condition).toBe('service_completed_successfully');
    expect(Object.keys(compose.services).sort()).toEqual(['flush', 'gateway', 'grafana', 'migrate', 'postgres', 'prometheus', 'rabbitmq']);
  });
});
