# sandrun schedulers: two instances on two hosts. One leads (leader election
# on a JetStream KV lease, election_ttl) and fires the cron schedules; the
# other takes over within election_ttl when the leader dies.
#
#   nomad job run deploy/nomad/sandrun-scheduler.nomad.hcl
#
# Needs the NATS job (deploy/nomad/nats.nomad.hcl) and the Nomad variable
# nomad/jobs/sandrun-scheduler with the item "creds" (a NATS user creds
# file): see docs/deploy.md.

variable "datacenters" {
  description = "Datacenters the schedulers may run in."
  type        = list(string)
  default     = ["dc1"]
}

variable "image" {
  description = "sandrun image; its entrypoint is the sandrun binary."
  type        = string
  default     = "sandrun/sandrun:0.1.0"
}

job "sandrun-scheduler" {
  datacenters = var.datacenters
  type        = "service"

  update {
    max_parallel     = 1
    health_check     = "checks"
    min_healthy_time = "10s"
    healthy_deadline = "3m"
    auto_revert      = true
  }

  group "scheduler" {
    count = 2

    constraint {
      distinct_hosts = true
    }

    network {
      port "metrics" {
        to = 9464
      }
    }

    service {
      name     = "sandrun-scheduler"
      provider = "nomad"
      port     = "metrics"
      tags     = ["prometheus"]

      check {
        name     = "sandrun-scheduler-healthz"
        type     = "http"
        path     = "/healthz"
        interval = "10s"
        timeout  = "2s"
      }
    }

    task "scheduler" {
      driver = "docker"

      config {
        image = var.image
        args  = ["scheduler", "--config", "/local/sandrun.yaml"]
        ports = ["metrics"]
      }

      # SIGTERM stops the scheduler; a follower takes over the schedules.
      kill_signal  = "SIGTERM"
      kill_timeout = "30s"

      # The daemon configuration. nats.url lists every registered NATS
      # server; the client learns the rest of the cluster from them. The
      # file is not re-read while running (change_mode noop): a NATS
      # server restarting must not restart the schedulers. With no NATS
      # server registered yet, the unknown key below makes sandrun refuse
      # the file and exit, and Nomad's restart picks up the next render.
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
  # The scheduler's identity in the leader election.
  name: "sandrun-scheduler-{{ env "NOMAD_SHORT_ALLOC_ID" }}"
  election_ttl: 15s
EOH
      }

      # NATS credentials (user JWT + nkey seed) from the Nomad variable,
      # in secrets/ (in-memory, private to this task).
      template {
        destination          = "secrets/sandrun.creds"
        change_mode          = "restart"
        error_on_missing_key = true
        data                 = <<EOH
{{- with nomadVar "nomad/jobs/sandrun-scheduler" }}{{ .creds }}{{ end }}
EOH
      }

      # The CA that signed the NATS servers' certificates.
      template {
        destination          = "secrets/nats-ca.pem"
        change_mode          = "restart"
        error_on_missing_key = true
        data                 = "{{ with nomadVar \"nomad/jobs/sandrun-scheduler\" }}{{ .nats_ca }}{{ end }}"
      }

      resources {
        cpu    = 200
        memory = 256
      }
    }
  }
}
