//! End-to-end tests of `allot serve` with the kinds kube-scheduler, kube-controller-manager and
//! the workload controllers use (tests/kinds/all-kinds.yaml, one object of each), driven by a
//! real kubectl 1.37: `kubectl api-resources` lists them with upstream's short names,
//! `kubectl apply` creates them (twice: the second apply patches), `kubectl get` prints
//! upstream's columns, `-o yaml` shows the defaults, `kubectl explain` reads their schemas,
//! updates keep what upstream keeps, one PriorityClass is the default, and the bootstrap roles
//! grant the scheduler and the controllers what upstream grants. tests/serve_etcd.rs runs the
//! suite again on etcd. kubectl comes from `ALLOT_KUBECTL` (set by `cargo xtask test`); without
//! it the tests fail.

// Unused where tests/serve_etcd.rs includes this file (it reaches its own copy).
#[allow(dead_code)]
#[path = "support/kubectl.rs"]
mod kubectl;

#[path = "support/serve.rs"]
mod harness;

use harness::Serve;

include!("support/embedded.rs");

fn manifest() -> String {
    format!("{}/tests/kinds/all-kinds.yaml", env!("CARGO_MANIFEST_DIR"))
}

/// The lines of a table whose first cell (after the namespace with `-A`) is `name`.
fn row<'a>(table: &'a str, name: &str) -> &'a str {
    table
        .lines()
        .find(|l| l.split_whitespace().any(|cell| cell == name))
        .unwrap_or_else(|| panic!("no row {name} in\n{table}"))
}

fn cells(line: &str) -> Vec<&str> {
    line.split_whitespace().collect()
}

#[test]
fn kubectl_applies_lists_and_explains_every_kind() {
    let (_dir, serve) = start();
    let resources = serve.ok(&["api-resources", "--no-headers"]);
    let expected = [
        ("deployments", "deploy", "apps/v1", "Deployment"),
        ("replicasets", "rs", "apps/v1", "ReplicaSet"),
        ("statefulsets", "sts", "apps/v1", "StatefulSet"),
        ("daemonsets", "ds", "apps/v1", "DaemonSet"),
        ("cronjobs", "cj", "batch/v1", "CronJob"),
        (
            "persistentvolumeclaims",
            "pvc",
            "v1",
            "PersistentVolumeClaim",
        ),
        ("persistentvolumes", "pv", "v1", "PersistentVolume"),
        ("services", "svc", "v1", "Service"),
        (
            "replicationcontrollers",
            "rc",
            "v1",
            "ReplicationController",
        ),
        (
            "poddisruptionbudgets",
            "pdb",
            "policy/v1",
            "PodDisruptionBudget",
        ),
        (
            "priorityclasses",
            "pc",
            "scheduling.k8s.io/v1",
            "PriorityClass",
        ),
        ("storageclasses", "sc", "storage.k8s.io/v1", "StorageClass"),
        (
            "horizontalpodautoscalers",
            "hpa",
            "autoscaling/v2",
            "HorizontalPodAutoscaler",
        ),
        ("configmaps", "cm", "v1", "ConfigMap"),
        ("serviceaccounts", "sa", "v1", "ServiceAccount"),
        (
            "certificatesigningrequests",
            "csr",
            "certificates.k8s.io/v1",
            "CertificateSigningRequest",
        ),
        (
            "volumeattributesclasses",
            "vac",
            "storage.k8s.io/v1",
            "VolumeAttributesClass",
        ),
    ];
    for (plural, short, version, kind) in expected {
        let line = cells(row(&resources, plural));
        assert_eq!(
            (line[1], line[2], line[4]),
            (short, version, kind),
            "{plural}"
        );
    }
    for plural in [
        "jobs",
        "controllerrevisions",
        "csinodes",
        "csidrivers",
        "csistoragecapacities",
        "volumeattachments",
        "secrets",
        "endpointslices",
        "validatingadmissionpolicies",
        "servicecidrs",
        "podtemplates",
    ] {
        row(&resources, plural);
    }

    let created = serve.ok(&["apply", "-f", &manifest()]);
    assert_eq!(created.lines().count(), 33, "{created}");
    assert!(created.contains("deployment.apps/web created"), "{created}");
    // A second apply patches (server-side strategic merge) and changes nothing.
    serve.ok(&["apply", "-f", &manifest()]);

    // Upstream's columns. The deployment controller makes the ReplicaSet of three (its pods
    // stay pending: there are no nodes).
    serve.ok(&[
        "wait",
        "--for=jsonpath={.status.updatedReplicas}=3",
        "deployment/web",
        "--timeout=60s",
    ]);
    let deployments = serve.ok(&["get", "deployments", "-o", "wide"]);
    assert_eq!(
        cells(deployments.lines().next().expect("header")),
        [
            "NAME",
            "READY",
            "UP-TO-DATE",
            "AVAILABLE",
            "AGE",
            "CONTAINERS",
            "IMAGES",
            "SELECTOR"
        ]
    );
    let web = cells(row(&deployments, "web"));
    assert_eq!(
        (web[1], web[2], web[3], web[5], web[6], web[7]),
        ("0/3", "3", "0", "nginx", "nginx:1.27", "app=web")
    );
    let claims = serve.ok(&["get", "pvc"]);
    assert_eq!(
        cells(claims.lines().next().expect("header")),
        [
            "NAME",
            "STATUS",
            "VOLUME",
            "CAPACITY",
            "ACCESS",
            "MODES",
            "STORAGECLASS",
            "VOLUMEATTRIBUTESCLASS",
            "AGE"
        ]
    );
    assert_eq!(cells(row(&claims, "data"))[..2], ["data", "Pending"]);
    let volumes = serve.ok(&["get", "pv"]);
    let pv = cells(row(&volumes, "pv-1"));
    // The PersistentVolume binder makes an unclaimed volume Available, as upstream's does.
    assert_eq!(pv[1..5], ["10Gi", "RWO", "Retain", "Available"]);
    let classes = serve.ok(&["get", "storageclass"]);
    assert!(classes.contains("fast (default)"), "{classes}");
    assert!(
        row(&classes, "csi.example.com").contains("WaitForFirstConsumer"),
        "{classes}"
    );
    let jobs = serve.ok(&["get", "jobs"]);
    assert_eq!(cells(row(&jobs, "pi"))[1..3], ["Running", "0/1"]);
    let services = serve.ok(&["get", "svc", "web"]);
    assert!(row(&services, "web").contains("80/TCP"), "{services}");
    let priority = serve.ok(&["get", "pc", "high"]);
    assert!(
        row(&priority, "high").contains("PreemptLowerPriority"),
        "{priority}"
    );
    let all = serve.ok(&["get", "all"]);
    for name in [
        "deployment.apps/web",
        "statefulset.apps/db",
        "job.batch/pi",
        "service/web",
    ] {
        assert!(all.contains(name), "{name} in\n{all}");
    }

    // Defaults and the generated Job selector, as stored.
    let yaml = serve.ok(&["get", "deployment", "web", "-o", "yaml"]);
    for line in [
        "progressDeadlineSeconds: 600",
        "revisionHistoryLimit: 10",
        "maxSurge: 25%",
        "schedulerName: default-scheduler",
    ] {
        assert!(yaml.contains(line), "{line} in\n{yaml}");
    }
    let job = serve.json(&["get", "job", "pi"]);
    let uid = job["metadata"]["uid"].as_str().expect("uid");
    assert_eq!(
        job["spec"]["selector"]["matchLabels"]["batch.kubernetes.io/controller-uid"],
        uid
    );

    // The schemas kubectl explain reads.
    let explain = serve.ok(&["explain", "deployment.spec.replicas"]);
    assert!(explain.contains("FIELD: replicas <integer>"), "{explain}");
    let explain = serve.ok(&["explain", "persistentvolumeclaim.spec.accessModes"]);
    assert!(explain.contains("accessModes <[]string>"), "{explain}");
}

#[test]
fn updates_keep_what_upstream_keeps_and_one_priority_class_is_the_default() {
    let (_dir, serve) = start();
    serve.ok(&["apply", "-f", &manifest()]);
    // A Deployment may scale but not change its selector.
    serve.ok(&["scale", "deployment", "web", "--replicas=5"]);
    let deployment = serve.json(&["get", "deployment", "web"]);
    assert_eq!(deployment["spec"]["replicas"], 5);
    assert_eq!(deployment["metadata"]["generation"], 2);
    let err = serve.fails(&[
        "patch",
        "deployment",
        "web",
        "--type=merge",
        "-p",
        r#"{"spec":{"selector":{"matchLabels":{"app":"web","tier":"x"}},"template":{"metadata":{"labels":{"app":"web","tier":"x"}}}}}"#,
    ]);
    assert!(
        err.contains("spec.selector: Invalid value") && err.contains("field is immutable"),
        "{err}"
    );
    // A Job's template is immutable.
    let err = serve.fails(&[
        "patch",
        "job",
        "pi",
        "--type=json",
        "-p",
        r#"[{"op":"replace","path":"/spec/template/spec/containers/0/image","value":"perl:2"}]"#,
    ]);
    assert!(
        err.contains("spec.template: Forbidden: field is immutable"),
        "{err}"
    );
    // A claim's request may grow; its access modes may not change.
    serve.ok(&[
        "patch",
        "pvc",
        "data",
        "--type=merge",
        "-p",
        r#"{"spec":{"resources":{"requests":{"storage":"2Gi"}}}}"#,
    ]);
    let err = serve.fails(&[
        "patch",
        "pvc",
        "data",
        "--type=merge",
        "-p",
        r#"{"spec":{"accessModes":["ReadWriteMany"]}}"#,
    ]);
    assert!(err.contains("spec is immutable after creation"), "{err}");
    // A StorageClass's parameters are fixed.
    let err = serve.fails(&[
        "patch",
        "storageclass",
        "fast",
        "--type=merge",
        "-p",
        r#"{"parameters":{"type":"ssd"}}"#,
    ]);
    assert!(
        err.contains("parameters: Forbidden: updates to parameters are forbidden."),
        "{err}"
    );
    // One default PriorityClass.
    let first = serve.file(
        "default-a.yaml",
        "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: default-a}\nvalue: 5\nglobalDefault: true\n",
    );
    serve.ok(&["apply", "-f", &first]);
    let second = serve.file(
        "default-b.yaml",
        "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: default-b}\nvalue: 6\nglobalDefault: true\n",
    );
    let err = serve.fails(&["create", "-f", &second]);
    assert!(
        err.contains(
            "priorityclasses.scheduling.k8s.io \"default-b\" is forbidden: PriorityClass default-a is already marked as default. Only one default can exist"
        ),
        "{err}"
    );
    // Bad objects are refused with upstream's message.
    let bad = serve.file(
        "bad.yaml",
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: bad}\nspec:\n  selector: {matchLabels: {app: a}}\n  template:\n    metadata: {labels: {app: b}}\n    spec:\n      containers: [{name: c, image: nginx}]\n",
    );
    let err = serve.fails(&["apply", "-f", &bad]);
    assert!(
        err.contains("The Deployment \"bad\" is invalid: spec.template.metadata.labels: Invalid value: map[string]string{\"app\":\"b\"}: `selector` does not match template `labels`"),
        "{err}"
    );
}

#[test]
fn bootstrap_roles_grant_the_scheduler_and_controllers_what_upstream_grants() {
    let (_dir, serve) = start();
    let can = |user: &str, verb: &str, resource: &str| {
        let out = serve.kubectl(&["auth", "can-i", verb, resource, "--as", user, "-A"]);
        String::from_utf8_lossy(&out.stdout).trim() == "yes"
    };
    for resource in [
        "csinodes.storage.k8s.io",
        "csidrivers.storage.k8s.io",
        "csistoragecapacities.storage.k8s.io",
        "storageclasses.storage.k8s.io",
        "persistentvolumes",
        "persistentvolumeclaims",
        "services",
        "replicationcontrollers",
        "replicasets.apps",
        "statefulsets.apps",
        "poddisruptionbudgets.policy",
    ] {
        assert!(can("system:kube-scheduler", "list", resource), "{resource}");
    }
    assert!(!can("system:kube-scheduler", "create", "deployments.apps"));
    let job_controller = "system:serviceaccount:kube-system:job-controller";
    assert!(can(job_controller, "update", "jobs.batch/status"));
    assert!(can(job_controller, "create", "pods"));
    assert!(!can(job_controller, "delete", "deployments.apps"));
    let deployments = "system:serviceaccount:kube-system:deployment-controller";
    assert!(can(deployments, "create", "replicasets.apps"));
    assert!(can(
        "system:kube-controller-manager",
        "watch",
        "statefulsets.apps"
    ));
    // The aggregated edit and view roles reach the new kinds.
    let editor = "editor";
    serve.ok(&[
        "create",
        "rolebinding",
        "edit",
        "--clusterrole=edit",
        "--user",
        editor,
        "-n",
        "default",
    ]);
    let can_in = |verb: &str, resource: &str| {
        let out = serve.kubectl(&[
            "auth", "can-i", verb, resource, "--as", editor, "-n", "default",
        ]);
        String::from_utf8_lossy(&out.stdout).trim() == "yes"
    };
    assert!(can_in("create", "deployments.apps"));
    assert!(can_in("patch", "deployments.apps/scale"));
    assert!(can_in("delete", "jobs.batch"));
    assert!(can_in("list", "controllerrevisions.apps"));
    assert!(!can_in("create", "controllerrevisions.apps"));
}

#[test]
fn every_kind_survives_a_restart() {
    let kubectl = find_kubectl();
    let dir = tempfile::tempdir().expect("tempdir");
    let before = {
        let serve = start_on(dir.path(), &kubectl, &[]);
        serve.ok(&["apply", "-f", &manifest()]);
        serve.json(&["get", "deployments,jobs,pvc,pv,sc,pc,cm,secrets,hpa", "-A"])
    };
    let serve = start_on(dir.path(), &kubectl, &[]);
    let after = serve.json(&["get", "deployments,jobs,pvc,pv,sc,pc,cm,secrets,hpa", "-A"]);
    let names = |list: &serde_json::Value| -> Vec<(String, String, String)> {
        list["items"]
            .as_array()
            .expect("items")
            .iter()
            .map(|i| {
                (
                    i["kind"].as_str().unwrap_or_default().to_string(),
                    i["metadata"]["name"]
                        .as_str()
                        .unwrap_or_default()
                        .to_string(),
                    i["metadata"]["uid"]
                        .as_str()
                        .unwrap_or_default()
                        .to_string(),
                )
            })
            .collect()
    };
    assert_eq!(names(&after), names(&before));
    assert!(names(&after).len() >= 9, "{:?}", names(&after));
    assert_eq!(after, before, "the objects come back as they were");
}
