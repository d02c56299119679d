module tenantry.dev/bench/local-path

go 1.23.0

require github.com/rancher/local-path-provisioner v0.0.30
