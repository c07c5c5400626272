/**
 * Every manifest in config/kubernetes/ validates against the Kubernetes OpenAPI schemas (the
 * kubernetes-models packages), and the RBAC grants exactly what the kubernetes sink calls.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { Namespace, ConfigMap, ServiceAccount } from 'kubernetes-models/v1';
import { DaemonSet } from 'kubernetes-models/apps/v1';
import { ClusterRole, ClusterRoleBinding, Role, RoleBinding } from 'kubernetes-models/rbac.authorization.k8s.io/v1';
import { ROOT } from '../helpers.ts';

type Manifest = Record<string, any>;
const MODELS: Record<string, new (data: any) => { validate(): void }> = {
  'v1/Namespace': Namespace,
  'v1/ConfigMap': ConfigMap,
  'v1/ServiceAccount': ServiceAccount,
  'apps/v1/DaemonSet': DaemonSet,
  'rbac.authorization.k8s.io/v1/ClusterRole': ClusterRole,
  'rbac.authorization.k8s.io/v1/ClusterRoleBinding': ClusterRoleBinding,
  'rbac.authorization.k8s.io/v1/Role': Role,
  'rbac.authorization.k8s.io/v1/RoleBinding': RoleBinding,
};

const DIR = join(ROOT, 'config', 'kubernetes');
const manifests = (): { file: string; doc: Manifest }[] =>
  readdirSync(DIR)
    .filter((f) => f.endsWith('.yaml'))
    .flatMap((file) => parseAllDocuments(readFileSync(join(DIR, file), 'utf8')).map((d) => ({ file, doc: d.toJS() as Manifest })));

function validate(doc: Manifest): void {
  const Model = MODELS[`${doc.apiVersion}/${doc.kind}`];
  if (Model === undefined) throw new Error(`no schema for ${doc.apiVersion} ${doc.kind}`);
  new Model(doc).validate();
}

describe('config/kubernetes', () => {
  it('every manifest validates against the Kubernetes schemas', () => {
    const all = manifests();
    expect(all.map((m) => `${m.file}: ${m.doc.kind}`).sort()).toEqual(
      [
        'daemonset.yaml: ConfigMap',
        'daemonset.yaml: DaemonSet',
        'daemonset.yaml: Namespace',
        'rbac.yaml: ClusterRole',
        'rbac.yaml: ClusterRoleBinding',
        'rbac.yaml: Role',
        'rbac.yaml: RoleBinding',
        'rbac.yaml: ServiceAccount',
      ].sort(),
    );
    for (const m of all) expect(() => validate(m.doc), `${m.file} ${m.doc.kind}`).not.toThrow();
  });

  it('the validation catches a broken manifest', () => {
    const ds = manifests().find((m) => m.doc.kind === 'DaemonSet')!.doc;
    const broken = structuredClone(ds);
    broken.spec.template.spec.containers[0].ports[0].containerPort = 'metrics';
    expect(() => validate(broken)).toThrow(/containerPort/);
    const noSelector = structuredClone(ds);
    delete noSelector.spec.selector;
    expect(() => validate(noSelector)).toThrow(/selector/);
  });

  it("the RBAC grants what the kubernetes sink calls and nothing else, to the DaemonSet's service account", () => {
    const all = manifests().map((m) => m.doc);
    const role = all.find((d) => d.kind === 'ClusterRole')!;
    const grants = role.rules
      .flatMap((r: Manifest) => r.resources.flatMap((res: string) => r.verbs.map((v: string) => `${r.apiGroups.join(',')}|${res}|${v}`)))
      .sort();
    expect(grants).toEqual(
      [
        '|events|create',
        '|nodes|get',
        '|nodes|list',
        '|nodes|patch',
        '|nodes/status|patch',
        '|pods/eviction|create',
        '|pods|delete',
        '|pods|list',
      ].sort(),
    );
    const binding = all.find((d) => d.kind === 'ClusterRoleBinding')!;
    const sa = all.find((d) => d.kind === 'ServiceAccount')!;
    expect(binding.roleRef).toEqual({ apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: role.metadata.name });
    expect(binding.subjects).toEqual([{ kind: 'ServiceAccount', name: sa.metadata.name, namespace: sa.metadata.namespace }]);
    const pod = all.find((d) => d.kind === 'DaemonSet')!.spec.template.spec;
    expect(pod.serviceAccountName).toBe(sa.metadata.name);
    expect(pod.containers[0].env).toContainEqual({ name: 'NODE_NAME', valueFrom: { fieldRef: { fieldPath: 'spec.nodeName' } } });
  });

  it("the fleet budget's Role grants Leases in the bridge's namespace, to its service account, and nothing else", () => {
    const all = manifests().map((m) => m.doc);
    const role = all.find((d) => d.kind === 'Role')!;
    const sa = all.find((d) => d.kind === 'ServiceAccount')!;
    expect(role.metadata.namespace).toBe(sa.metadata.namespace);
    expect(role.rules).toEqual([
      { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['get', 'list', 'watch', 'create', 'update', 'delete'] },
    ]);
    const binding = all.find((d) => d.kind === 'RoleBinding')!;
    expect(binding.roleRef).toEqual({ apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: role.metadata.name });
    expect(binding.subjects).toEqual([{ kind: 'ServiceAccount', name: sa.metadata.name, namespace: sa.metadata.namespace }]);
  });
});
