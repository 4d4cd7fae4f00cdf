module dragnet-loadgen

go 1.19
