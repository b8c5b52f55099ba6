/**
 * The mesh configuration a lab writes into meshd's config directory, as a user would write it for
 * VMs: a ServiceEntry per service (hosts, VIP, ports with targetPort and the protocol shared/protocol
 * selects from the port's name or appProtocol, a workloadSelector), a
 * WorkloadGroup per proxied workload and per gateway (its proxy auto-registers into it), and a
 * WorkloadEntry per workload without a proxy.
 *
 * @module
 */
import { stringify } from "yaml";
import { type LabPlan, serviceHost } from "../../shared/internal/lab/plan.ts";
import { AUTO_DETECT, servicePortProtocol } from "../../shared/protocol/mod.ts";

/** The name of the generated file in meshd's config directory; `lab apply` refuses it. */
export const GENERATED_CONFIG_FILE = "lab-generated.yaml";

/** The multi-document YAML for a plan. */
export function meshConfigYaml(plan: LabPlan): string {
  const docs: unknown[] = [];
  for (const s of plan.services) {
    docs.push({
      apiVersion: "networking.mesh.io/v1",
      kind: "ServiceEntry",
      metadata: { name: s.name, namespace: s.namespace },
      spec: {
        hosts: [serviceHost(s)],
        addresses: [s.vip],
        ports: s.ports.map((p) => {
          // As Kubernetes would: appProtocol, else the name prefix; auto-detect leaves `protocol` out.
          const protocol = servicePortProtocol(p);
          return {
            name: p.name,
            number: p.port,
            targetPort: p.targetPort,
            ...(protocol === AUTO_DETECT ? {} : { protocol }),
          };
        }),
        location: "MESH_INTERNAL",
        resolution: "STATIC",
        workloadSelector: { labels: s.labels },
      },
    });
  }
  for (const w of plan.workloads) {
    const metadata = { name: w.name, namespace: w.namespace };
    docs.push(
      w.sidecar || w.gateway
        ? {
          apiVersion: "networking.mesh.io/v1",
          kind: "WorkloadGroup",
          metadata,
          spec: { metadata: { labels: w.labels }, template: { serviceAccount: w.serviceAccount } },
        }
        : {
          apiVersion: "networking.mesh.io/v1",
          kind: "WorkloadEntry",
          metadata,
          spec: { address: w.address, labels: w.labels, serviceAccount: w.serviceAccount },
        },
    );
  }
  return docs.map((d) => stringify(d)).join("---\n");
}
