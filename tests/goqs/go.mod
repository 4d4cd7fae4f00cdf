module dragnet.test/goqs

go 1.19
