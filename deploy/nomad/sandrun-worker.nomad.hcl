# sandrun workers, two kinds:
#
#   * group "docker": on nodes of class "docker"; the worker runs in a
#     container and starts each job in a sibling container through the host's
#     Docker engine (the socket is mounted).
#   * group "hpc": on nodes of class "hpc" (no Docker there); the worker runs
#     as a plain process (raw_exec) and starts each job with Apptainer,
#     caching SIF images on /scratch.
#
# A worker fails a job whose backend profile it lacks, so the two kinds serve
# different queues: docker workers the queues in docker_queues (profile
# "docker"), HPC workers those in hpc_queues (profile "hpc"). Submit with
# `sandrun submit --backend docker -- CMD` or
# `sandrun submit --queue hpc --backend hpc --image docker://python:3.12-slim -- CMD`.
# Neither kind has a "local" profile: a command run inside the docker
# worker's container would hold the Docker socket.
#
#   nomad job run -var docker_count=4 -var hpc_count=8 deploy/nomad/sandrun-worker.nomad.hcl
#
# Needs the NATS job, the Nomad variable nomad/jobs/sandrun-worker with the
# item "creds" (a NATS user creds file), and on the clients (docs/deploy.md):
#   * node_class = "docker" or "hpc";
#   * docker nodes: plugin "docker" { config { volumes { enabled = true } } }
#     for the socket mount;
#   * hpc nodes: plugin "raw_exec" { config { enabled = true } }, the sandrun
#     binary at var.hpc_binary, Apptainer at var.apptainer_binary, and a host
#     volume "scratch" whose path is /scratch;
#   * max_kill_timeout >= 60s on every node (kill_timeout below).
#
# Stopping a worker (job update, node drain, nomad alloc stop) sends SIGTERM:
# the worker stops claiming, lets running jobs finish for drain_timeout,
# stops the rest after kill_grace and hands them back to the queue. Nomad
# waits kill_timeout before SIGKILL, so kill_timeout > drain_timeout +
# kill_grace + the time to hand jobs back.

variable "datacenters" {
  description = "Datacenters the workers may run in."
  type        = list(string)
  default     = ["dc1"]
}

variable "image" {
  description = "sandrun image for the docker workers; its entrypoint is the sandrun binary."
  type        = string
  default     = "sandrun/sandrun:0.1.0"
}

variable "docker_count" {
  description = "Number of docker workers."
  type        = number
  default     = 2
}

variable "hpc_count" {
  description = "Number of HPC workers (at most one per hpc node)."
  type        = number
  default     = 2
}

variable "docker_slots" {
  description = "Jobs one docker worker runs at once."
  type        = number
  default     = 8
}

variable "hpc_slots" {
  description = "Jobs one HPC worker runs at once."
  type        = number
  default     = 16
}

variable "docker_queues" {
  description = "Queues the docker workers serve; their jobs name backend \"docker\"."
  type        = list(string)
  default     = ["default"]
}

variable "hpc_queues" {
  description = "Queues the HPC workers serve; their jobs name backend \"hpc\"."
  type        = list(string)
  default     = ["hpc"]
}

variable "job_image" {
  description = "Default image of the docker backend profile (a job may name its own)."
  type        = string
  default     = "debian:bookworm-slim"
}

variable "hpc_image" {
  description = "Default image of the singularity backend profile."
  type        = string
  default     = "docker://debian:bookworm-slim"
}

variable "hpc_binary" {
  description = "Absolute path of the sandrun binary on the hpc nodes."
  type        = string
  default     = "/usr/local/bin/sandrun"
}

variable "hpc_user" {
  description = "Unprivileged user the HPC workers (and so Apptainer) run as."
  type        = string
  default     = "sandrun"
}

variable "apptainer_binary" {
  description = "Apptainer (or Singularity) on the hpc nodes."
  type        = string
  default     = "/usr/bin/apptainer"
}

variable "hpc_scratch" {
  description = "Scratch directory of the singularity profile (SIF cache, runtime temp files)."
  type        = string
  default     = "/scratch/sandrun"
}

job "sandrun-worker" {
  datacenters = var.datacenters
  type        = "service"

  update {
    max_parallel     = 2
    health_check     = "checks"
    min_healthy_time = "10s"
    healthy_deadline = "5m"
    auto_revert      = true
  }

  group "docker" {
    count = var.docker_count

    constraint {
      attribute = "${node.class}"
      value     = "docker"
    }

    network {
      port "metrics" {
        to = 9464
      }
    }

    service {
      name     = "sandrun-worker"
      provider = "nomad"
      port     = "metrics"
      tags     = ["prometheus", "docker"]

      check {
        name     = "sandrun-worker-healthz"
        type     = "http"
        path     = "/healthz"
        interval = "10s"
        timeout  = "2s"
      }
    }

    task "worker" {
      driver = "docker"

      config {
        image = var.image
        args  = ["worker", "--config", "/local/sandrun.yaml"]
        ports = ["metrics"]

        # Jobs run as sibling containers on the host's engine. Whoever holds
        # this socket controls the host: the worker needs read/write on it
        # (run the image as root, or add the socket's group with group_add).
        mount {
          type     = "bind"
          source   = "/var/run/docker.sock"
          target   = "/var/run/docker.sock"
          readonly = false
        }
      }

      kill_signal  = "SIGTERM"
      kill_timeout = "60s"

      # See the scheduler job for change_mode noop and the unknown key.
      template {
        destination = "local/sandrun.yaml"
        change_mode = "noop"
        data        = <<EOH
{{- $nats := nomadService "nats" }}
nats:
  url: "{{ range $i, $s := $nats }}{{ if $i }},{{ end }}nats://{{ $s.Address }}:{{ $s.Port }}{{ end }}"
  creds: "{{ env "NOMAD_SECRETS_DIR" }}/sandrun.creds"
  tls_ca: "{{ env "NOMAD_SECRETS_DIR" }}/nats-ca.pem"
{{- if not $nats }}
waiting_for_nats_service: true
{{- end }}
metrics_addr: 0.0.0.0:9464
log_format: json
layout:
  replicas: 3
  retention: 168h
worker:
  name: "sandrun-worker-docker-{{ env "NOMAD_SHORT_ALLOC_ID" }}"
  queues: ${jsonencode(var.docker_queues)}
  slots: ${var.docker_slots}
  lease_ttl: 30s
  drain_timeout: 30s
  kill_grace: 5s
backends:
  docker:
    kind: docker
    docker:
      image: "${var.job_image}"
      pull: if-not-present
      network: none
policy:
  ceiling:
    subagent: allowlist
    cron: approve
  allowlist: []
EOH
      }

      template {
        destination          = "secrets/sandrun.creds"
        change_mode          = "restart"
        error_on_missing_key = true
        data                 = <<EOH
{{- with nomadVar "nomad/jobs/sandrun-worker" }}{{ .creds }}{{ end }}
EOH
      }

      # The CA that signed the NATS servers' certificates.
      template {
        destination          = "secrets/nats-ca.pem"
        change_mode          = "restart"
        error_on_missing_key = true
        data                 = "{{ with nomadVar \"nomad/jobs/sandrun-worker\" }}{{ .nats_ca }}{{ end }}"
      }

      resources {
        cpu    = 500
        memory = 512
      }
    }
  }

  group "hpc" {
    count = var.hpc_count

    constraint {
      attribute = "${node.class}"
      value     = "hpc"
    }

    # raw_exec has no network namespace: the metrics port is the host's, so
    # one worker per node (size a node's share with hpc_slots).
    constraint {
      distinct_hosts = true
    }

    # Placement only: the group lands on nodes that declare a host volume
    # "scratch" (path /scratch). raw_exec sees the host's file system, so
    # nothing is mounted.
    volume "scratch" {
      type      = "host"
      source    = "scratch"
      read_only = false
    }

    network {
      port "metrics" {
        static = 9464
      }
    }

    service {
      name     = "sandrun-worker"
      provider = "nomad"
      port     = "metrics"
      tags     = ["prometheus", "hpc"]

      check {
        name     = "sandrun-worker-healthz"
        type     = "http"
        path     = "/healthz"
        interval = "10s"
        timeout  = "2s"
      }
    }

    task "worker" {
      driver = "raw_exec"
      user   = var.hpc_user

      config {
        command = var.hpc_binary
        args    = ["worker", "--config", "${NOMAD_TASK_DIR}/sandrun.yaml"]
      }

      kill_signal  = "SIGTERM"
      kill_timeout = "60s"

      template {
        destination = "local/sandrun.yaml"
        change_mode = "noop"
        data        = <<EOH
{{- $nats := nomadService "nats" }}
nats:
  url: "{{ range $i, $s := $nats }}{{ if $i }},{{ end }}nats://{{ $s.Address }}:{{ $s.Port }}{{ end }}"
  creds: "{{ env "NOMAD_SECRETS_DIR" }}/sandrun.creds"
  tls_ca: "{{ env "NOMAD_SECRETS_DIR" }}/nats-ca.pem"
{{- if not $nats }}
waiting_for_nats_service: true
{{- end }}
metrics_addr: "{{ env "NOMAD_ADDR_metrics" }}"
log_format: json
layout:
  replicas: 3
  retention: 168h
worker:
  name: "sandrun-worker-hpc-{{ env "NOMAD_SHORT_ALLOC_ID" }}"
  queues: ${jsonencode(var.hpc_queues)}
  slots: ${var.hpc_slots}
  lease_ttl: 30s
  drain_timeout: 30s
  kill_grace: 5s
backends:
  hpc:
    kind: singularity
    singularity:
      image: "${var.hpc_image}"
      binary: "${var.apptainer_binary}"
      # Shared by the workers of a node and, on a shared file system,
      # across nodes: each image is pulled once, under a file lock.
      scratch: "${var.hpc_scratch}"
      network: none
policy:
  ceiling:
    subagent: allowlist
    cron: approve
  allowlist: []
EOH
      }

      template {
        destination          = "secrets/sandrun.creds"
        change_mode          = "restart"
        error_on_missing_key = true
        data                 = <<EOH
{{- with nomadVar "nomad/jobs/sandrun-worker" }}{{ .creds }}{{ end }}
EOH
      }

      # The CA that signed the NATS servers' certificates.
      template {
        destination          = "secrets/nats-ca.pem"
        change_mode          = "restart"
        error_on_missing_key = true
        data                 = "{{ with nomadVar \"nomad/jobs/sandrun-worker\" }}{{ .nats_ca }}{{ end }}"
      }

      resources {
        cpu    = 2000
        memory = 2048
      }
    }
  }
}
