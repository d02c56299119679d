module tenantry.dev/bench/capsule

go 1.24.0

require github.com/projectcapsule/capsule v0.10.3
