import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join, posix } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { IDeployment } from 'kubernetes-models/apps/v1/Deployment';
import type { IHorizontalPodAutoscaler } from 'kubernetes-models/autoscaling/v2/HorizontalPodAutoscaler';
import type { INetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1/NetworkPolicy';
import type { IPodDisruptionBudget } from 'kubernetes-models/policy/v1/PodDisruptionBudget';
import type { IContainer } from 'kubernetes-models/v1/Container';
import type { ISecret } from 'kubernetes-models/v1/Secret';
import type { IService } from 'kubernetes-models/v1/Service';
import type { IServiceAccount } from 'kubernetes-models/v1/ServiceAccount';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { checkKeyMaterial } from '../../../src/commands/check-key-material.js';
import { parseConfig } from '../../../src/config/load-config.js';
import { OWN_PATHS } from '../../../src/routing/own-paths.js';
import { drainProblems, drainSec, EXIT_MARGIN_SEC } from '../../support/drain-budget.js';
import { generateSigningKey } from '../../support/generate-signing-key.js';
import { anchors, links, readDoc } from '../../support/markdown.js';
import {
  findManifest,
  KUBERNETES_DIR,
  kubectlKustomize,
  readKustomization,
  readManifests,
  renderKustomization,
  type Manifest,
} from '../../support/kubernetes-manifests.js';
import { kubernetesSchemaProblems } from '../../support/kubernetes-schemas.js';
import { tempDir } from '../../support/temp-dirs.js';
import { findCommand } from '../../support/find-command.js';

// config/kubernetes/ as kubectl sends it, held against the Kubernetes API's schemas and
// against the gateway itself: its configuration loader and key checks, its ports and probe
// paths, its drain; no cluster runs the tests.

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const KUBECTL = findCommand('kubectl') ?? '';
const objects = renderKustomization();
const deployment = findManifest<IDeployment>(objects, 'Deployment');
const pod = deployment.spec?.template.spec;
const container = pod?.containers.find((c) => c.name === 'gateway') ?? ({} as IContainer);
const exampleSecrets = readManifests(join(KUBERNETES_DIR, 'secret.example.yaml')) as ISecret[];

/** The Deployment's environment variable `name`. */
function envVar(name: string) {
  return container.env?.find((variable) => variable.name === name);
}

/** The gateway's YAML as the pod reads it: the generated ConfigMap's file at GATEWAY_CONFIG. */
function podConfigText(): string {
  const path = envVar('GATEWAY_CONFIG')?.value ?? '';
  const mount = container.volumeMounts?.find((m) => m.mountPath === posix.dirname(path));
  const volume = pod?.volumes?.find((v) => v.name === mount?.name);
  const configMap = findManifest(objects, 'ConfigMap', volume?.configMap?.name);
  const data = configMap.data as Record<string, string>;
  const text = data[posix.basename(path)];
  if (text === undefined) throw new Error(`the ConfigMap holds no ${posix.basename(path)}`);
  return text;
}

/**
 * The environment the container gets, each variable from a Secret given a value of the form
 * its comment asks for (`openssl rand -hex 32`).
 */
function podEnvironment(): Record<string, string> {
  return Object.fromEntries(
    (container.env ?? []).map((variable): [string, string] => [
      variable.name,
      variable.value ?? randomBytes(32).toString('hex'),
    ]),
  );
}

/** The gateway's configuration as the pod loads it, its secrets' folder moved to `secretsDir`. */
function podConfig(secretsDir?: string) {
  let text = podConfigText();
  if (secretsDir !== undefined) text = text.replaceAll(SECRETS_MOUNT + '/', `${secretsDir}/`);
  return parseConfig(text, 'config/kubernetes/gateway.yaml', podEnvironment());
}

const SECRETS_MOUNT = '/etc/accounts-gateway/secrets';

/** The container port named `name`. */
function containerPort(name: string | number | undefined): number | undefined {
  if (typeof name === 'number') return name;
  return container.ports?.find((port) => port.name === name)?.containerPort;
}

describe('config/kubernetes, rendered as kubectl apply -k sends it', () => {
  it('is every object the gateway needs, each valid against the Kubernetes schemas', () => {
    expect(objects.map((object) => object.kind).sort()).toEqual([
      'ConfigMap',
      'Deployment',
      'HorizontalPodAutoscaler',
      'Namespace',
      'NetworkPolicy',
      'PodDisruptionBudget',
      'Service',
      'ServiceAccount',
    ]);
    for (const object of objects)
      expect(kubernetesSchemaProblems(object), `${object.kind} ${object.metadata.name}`).toEqual(
        [],
      );
  });

  it('reports a field the API does not know, and a value of the wrong type', () => {
    const typo = structuredClone(deployment) as unknown as Manifest & IDeployment;
    const spec = typo.spec?.template.spec?.containers[0]?.securityContext as Record<
      string,
      unknown
    >;
    spec.readOnlyRootFileSystem = true;
    spec.runAsUser = 'node';
    expect(kubernetesSchemaProblems(typo)).toEqual([
      '/spec/template/spec/containers/0/securityContext/runAsUser: must be integer',
      '/spec/template/spec/containers/0/securityContext/readOnlyRootFileSystem: not a field of apps/v1 Deployment',
    ]);
  });

  it.runIf(KUBECTL !== '')('is what kubectl kustomize renders', async () => {
    const byName = (a: Manifest, b: Manifest) =>
      `${a.kind}/${a.metadata.name}`.localeCompare(`${b.kind}/${b.metadata.name}`);
    const rendered = await kubectlKustomize(KUBECTL);
    expect(rendered.sort(byName)).toEqual([...objects].sort(byName));
  });

  it('keeps its Secrets out of what it applies, and gives the example of each it reads', () => {
    expect(objects.filter((object) => object.kind === 'Secret')).toEqual([]);
    for (const secret of exampleSecrets) {
      expect(kubernetesSchemaProblems(secret as unknown as Manifest)).toEqual([]);
      expect(secret.metadata?.namespace).toBe(readKustomization().namespace);
    }
    const keysOf = (name: string | undefined) =>
      Object.keys(exampleSecrets.find((s) => s.metadata?.name === name)?.stringData ?? {});
    const redisPassword = envVar('REDIS_PASSWORD')?.valueFrom?.secretKeyRef;
    expect(keysOf(redisPassword?.name)).toContain(redisPassword?.key);
    const secretVolume = pod?.volumes?.find((v) => v.secret !== undefined);
    expect(keysOf(secretVolume?.secret?.secretName).sort()).toEqual([
      'fleet-key',
      'signing-key.pem',
    ]);
  });
});

describe('the gateway configuration of config/kubernetes', () => {
  it('passes the gateway validation with the environment the pod gives it', () => {
    const config = podConfig();
    expect(config.credentials.store).toBe('redis');
    expect(config.server.workers).toBe(1);
    // Every ${VAR} it reads, the container sets.
    const referenced = [...podConfigText().matchAll(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g)];
    for (const [, name] of referenced) expect(envVar(name ?? '')).toBeDefined();
  });

  it('reads its keys from the Secret files where the pod mounts them, keys the gateway accepts', async () => {
    const config = podConfig();
    const files = [config.auth.basic.verifiedRecords.fleetKeyFile, config.tokens.signingKeyFile];
    const mount = container.volumeMounts?.find((m) => m.mountPath === SECRETS_MOUNT);
    const volume = pod?.volumes?.find((v) => v.name === mount?.name);
    const secretKeys = Object.keys(
      exampleSecrets.find((s) => s.metadata?.name === volume?.secret?.secretName)?.stringData ?? {},
    );
    for (const file of files) {
      expect(posix.dirname(file ?? '')).toBe(SECRETS_MOUNT);
      expect(secretKeys).toContain(posix.basename(file ?? ''));
    }
    // Made as the README makes them, where the pod would find them.
    const dir = tempDir('kubernetes-secrets-');
    writeFileSync(join(dir, 'fleet-key'), randomBytes(32).toString('base64'));
    writeFileSync(join(dir, 'signing-key.pem'), (await generateSigningKey()).pem);
    await expect(
      checkKeyMaterial(podConfig(dir), 'config/kubernetes/gateway.yaml', { startFiles: true }),
    ).resolves.toBeUndefined();
  });

  it('listens on every interface of the pod, on the ports the container declares', () => {
    const config = podConfig();
    expect(config.server.host).toBe('0.0.0.0');
    expect(config.admin.host).toBe('0.0.0.0');
    expect(config.admin.enabled).toBe(true);
    expect(containerPort('http')).toBe(config.server.port);
    expect(containerPort('admin')).toBe(config.admin.port);
    const service = findManifest<IService>(objects, 'Service');
    expect(service.spec?.ports?.map((port) => containerPort(port.targetPort))).toEqual([
      config.server.port,
    ]);
  });

  it('is probed on the admin port: readiness on its /readyz, liveness and start on its /healthz', () => {
    const config = podConfig();
    const probes = {
      readiness: container.readinessProbe,
      liveness: container.livenessProbe,
      startup: container.startupProbe,
    };
    for (const [name, probe] of Object.entries(probes))
      expect(containerPort(probe?.httpGet?.port), name).toBe(config.admin.port);
    expect(probes.readiness?.httpGet?.path).toBe(OWN_PATHS.readiness.path);
    expect(probes.liveness?.httpGet?.path).toBe(OWN_PATHS.health.path);
    expect(probes.startup?.httpGet?.path).toBe(OWN_PATHS.health.path);
  });

  it('gives the drain its time: preStop before SIGTERM, then the drain and the exit within the grace period', () => {
    const config = podConfig();
    expect(drainProblems(config)).toEqual([]);
    const preStopSec = container.lifecycle?.preStop?.sleep?.seconds ?? 0;
    // The endpoints controller, kube-proxy and the ingress controllers take the pod out meanwhile.
    expect(preStopSec).toBeGreaterThanOrEqual(5);
    expect(pod?.terminationGracePeriodSeconds).toBeGreaterThanOrEqual(
      preStopSec + drainSec(config) + EXIT_MARGIN_SEC,
    );
    // A rolling update adds a ready pod before it takes one away.
    expect(deployment.spec?.strategy?.rollingUpdate?.maxUnavailable).toBe(0);
  });

  it('holds a drain that would cut requests to be a problem', () => {
    const short = parseConfig(
      'server: { drainTimeoutMs: 6000, keepAliveTimeoutMs: 5000, shutdownDelayMs: 2000 }',
      'test',
    );
    expect(drainProblems(short)).toEqual([
      'drainTimeoutMs 6000 < shutdownDelayMs 2000 + keepAliveTimeoutMs 5000',
      'drainTimeoutMs 6000 < upstreams.accounts.timeoutMs 10000 + keepAliveTimeoutMs 5000',
    ]);
  });

  it('reaches Redis through the redis-ha chart, with the password of the Secret the chart reads', () => {
    const config = podConfig();
    const values = parse(readFileSync(join(KUBERNETES_DIR, 'redis-ha-values.yaml'), 'utf8')) as {
      fullnameOverride: string;
      auth: boolean;
      existingSecret: string;
      authKey: string;
      haproxy: { enabled: boolean; servicePort?: number };
      redis: { config: Record<string, string> };
    };
    const url = new URL(config.credentials.redis.url);
    expect(config.credentials.redis.mode).toBe('standalone');
    expect(url.hostname).toBe(`${values.fullnameOverride}-haproxy`);
    expect(Number(url.port)).toBe(values.haproxy.servicePort ?? 6379);
    expect(values.haproxy.enabled).toBe(true);
    expect(values.auth).toBe(true);
    expect(envVar('REDIS_PASSWORD')?.valueFrom?.secretKeyRef).toEqual({
      name: values.existingSecret,
      key: values.authKey,
    });
    expect(values.redis.config['maxmemory-policy']).toBe('noeviction');
  });
});

describe('the pod of config/kubernetes', () => {
  it('meets the Restricted Pod Security Standard its namespace enforces', () => {
    const namespace = findManifest(objects, 'Namespace');
    expect(namespace.metadata.labels?.['pod-security.kubernetes.io/enforce']).toBe('restricted');
    expect(pod?.securityContext?.runAsNonRoot).toBe(true);
    expect(pod?.securityContext?.seccompProfile?.type).toBe('RuntimeDefault');
    expect(pod?.hostNetwork ?? false).toBe(false);
    for (const c of [...(pod?.initContainers ?? []), ...(pod?.containers ?? [])]) {
      expect(c.securityContext?.allowPrivilegeEscalation, c.name).toBe(false);
      expect(c.securityContext?.capabilities?.drop, c.name).toEqual(['ALL']);
      expect(c.securityContext?.capabilities?.add, c.name).toBeUndefined();
      expect(c.securityContext?.readOnlyRootFilesystem, c.name).toBe(true);
    }
    for (const volume of pod?.volumes ?? [])
      expect(
        Object.keys(volume).filter((key) => key !== 'name'),
        volume.name,
      ).toSatisfy(
        (kinds: string[]) =>
          kinds.length === 1 && ['configMap', 'secret', 'emptyDir'].includes(kinds[0] ?? ''),
      );
  });

  it('runs as the image user, by number, and mounts no API token', () => {
    const dockerfile = readFileSync(join(ROOT, 'Dockerfile'), 'utf8');
    // `node` is uid and gid 1000 in the node images; runAsNonRoot cannot check a user name.
    expect(dockerfile).toMatch(/^USER node$/m);
    expect(pod?.securityContext?.runAsUser).toBe(1000);
    expect(pod?.securityContext?.runAsGroup).toBe(1000);
    expect(pod?.automountServiceAccountToken).toBe(false);
    const account = findManifest<IServiceAccount>(objects, 'ServiceAccount');
    expect(pod?.serviceAccountName).toBe(account.metadata?.name);
    expect(account.automountServiceAccountToken).toBe(false);
  });

  it('runs the image entrypoint with its CMD, at the version of package.json', () => {
    const dockerfile = readFileSync(join(ROOT, 'Dockerfile'), 'utf8');
    const cmd = /^CMD (\[.*\])$/m.exec(dockerfile)?.[1] ?? '[]';
    expect(container.command).toBeUndefined();
    expect(container.args).toEqual(JSON.parse(cmd));
    const { version } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
      version: string;
    };
    expect(container.image?.split(':').at(-1)).toBe(version);
    expect(container.resources?.requests?.cpu).toBeDefined();
    expect(container.resources?.limits?.memory).toBeDefined();
  });

  it('is selected by its Service, budget and policy, and scaled by its autoscaler alone', () => {
    const labels = deployment.spec?.template.metadata?.labels ?? {};
    const selects = (matchLabels: Record<string, string> | undefined) =>
      Object.entries(matchLabels ?? { none: 'none' }).every(([k, v]) => labels[k] === v);
    expect(selects(deployment.spec?.selector.matchLabels)).toBe(true);
    expect(selects(findManifest<IService>(objects, 'Service').spec?.selector)).toBe(true);
    const budget = findManifest<IPodDisruptionBudget>(objects, 'PodDisruptionBudget');
    expect(selects(budget.spec?.selector?.matchLabels)).toBe(true);
    const policy = findManifest<INetworkPolicy>(objects, 'NetworkPolicy');
    expect(selects(policy.spec?.podSelector?.matchLabels)).toBe(true);
    for (const rule of policy.spec?.ingress ?? [])
      for (const port of rule.ports ?? []) expect(containerPort(port.port)).toBeDefined();
    const autoscaler = findManifest<IHorizontalPodAutoscaler>(objects, 'HorizontalPodAutoscaler');
    expect(autoscaler.spec?.scaleTargetRef).toEqual({
      apiVersion: deployment.apiVersion,
      kind: deployment.kind,
      name: deployment.metadata?.name,
    });
    // The autoscaler owns the count: a replicas field would reset it at every apply.
    expect(deployment.spec?.replicas).toBeUndefined();
    // One pod evicted while one rolls still leaves one serving.
    expect(autoscaler.spec?.minReplicas).toBeGreaterThanOrEqual(
      Number(budget.spec?.maxUnavailable) + 2,
    );
  });
});

describe('config/kubernetes/README.md', () => {
  it('names each file of the folder', () => {
    const readme = readFileSync(join(KUBERNETES_DIR, 'README.md'), 'utf8');
    const files = [
      'kustomization.yaml',
      ...readKustomization().resources,
      'gateway.yaml',
      'secret.example.yaml',
      'redis-ha-values.yaml',
    ];
    for (const file of files) expect(readme, file).toContain(`\`${file}\``);
  });

  it('links to files and headings that exist', () => {
    const from = 'config/kubernetes/README.md';
    const relative = links(readDoc(from)).filter(({ target }) => !/^[a-z][a-z+.-]*:/i.test(target));
    expect(relative.length).toBeGreaterThan(0);
    for (const { target } of relative) {
      const [path = '', anchor] = target.split('#');
      const file = posix.join(posix.dirname(from), path);
      expect(existsSync(join(ROOT, file)), target).toBe(true);
      if (anchor !== undefined) expect(anchors(readDoc(file)).has(anchor), target).toBe(true);
    }
  });
});
