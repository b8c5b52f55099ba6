/**
 * The local mesh lab (README.md): meshd and workloads with or without sidecars, each in its own
 * network namespace, on one machine. The entry points for programs (the quickstart, tests).
 *
 * @module
 */
export { labApply, labDelete } from "./config_files.ts";
export { InputError } from "../../shared/internal/lab/input_error.ts";
export { type DownReport, labDown } from "./down.ts";
export { execArgv, findWorkload, labExec, workloadOf } from "../../shared/internal/lab/exec.ts";
export { labUnavailable, run, type RunResult } from "./host.ts";
export { labNames } from "../../shared/internal/lab/naming.ts";
export type { LabPlan, PlannedService, PlannedWorkload } from "../../shared/internal/lab/plan.ts";
export { labStatus } from "./status.ts";
export { labPaths, type LabState } from "../../shared/internal/lab/state.ts";
export { parseTopology, type Topology } from "../../shared/internal/lab/topology.ts";
export { labUp, type LabUpOptions } from "./up.ts";
export { isKubeLab, labKubeconfig, labKubectl, labObjectsYaml } from "./kube_config.ts";
export { type Probe, probe, probeText, xfccOf } from "./probe.ts";
