! Profiling under `use mpi` (MPI-4.0 15.2): the program defines its own
! MPI_SEND, MPI_RECV and MPI_BCAST, which count their calls and the items
! they carry and call PMPI_SEND, PMPI_RECV and PMPI_BCAST. The library's
! MPI_SEND is a weak name, so the program's replaces it; PMPI_SEND reaches
! the library. Each rank checks its counts and the data the PMPI calls
! moved (a ring of sends, then a broadcast).
! Prints PASS profile.

program profile
  use mpi
  implicit none
  integer :: rank, np, ierr, errs, total, i, st(MPI_STATUS_SIZE)
  integer :: sbuf(5), rbuf(5), b(3)
  integer :: nsend, nrecv, nbcast, items
  common /counts/ nsend, nrecv, nbcast, items

  errs = 0
  nsend = 0
  nrecv = 0
  nbcast = 0
  items = 0
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, np, ierr)
  sbuf = [(rank * 100 + i, i = 1, 5)]
  rbuf = -1
  if (np > 1) then
    if (mod(rank, 2) == 0) then
      call MPI_Send(sbuf, 5, MPI_INTEGER, mod(rank + 1, np), 7, MPI_COMM_WORLD, ierr)
      call MPI_Recv(rbuf, 5, MPI_INTEGER, mod(rank + np - 1, np), 7, MPI_COMM_WORLD, st, ierr)
    else
      call MPI_Recv(rbuf, 5, MPI_INTEGER, mod(rank + np - 1, np), 7, MPI_COMM_WORLD, st, ierr)
      call MPI_Send(sbuf, 5, MPI_INTEGER, mod(rank + 1, np), 7, MPI_COMM_WORLD, ierr)
    end if
    if (any(rbuf /= [(mod(rank + np - 1, np) * 100 + i, i = 1, 5)])) errs = errs + 1
    if (st(MPI_SOURCE) /= mod(rank + np - 1, np) .or. st(MPI_TAG) /= 7) errs = errs + 1
    if (nsend /= 1 .or. nrecv /= 1) errs = errs + 1
  end if
  b = 0
  if (rank == 0) b = [4, 5, 6]
  call MPI_Bcast(b, 3, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
  if (any(b /= [4, 5, 6]) .or. ierr /= MPI_SUCCESS) errs = errs + 1
  if (nbcast /= 1) errs = errs + 1
  if (np > 1 .and. items /= 5 + 5 + 3) errs = errs + 1
  ! Not profiled: reaches the library directly.
  call MPI_Reduce(errs, total, 1, MPI_INTEGER, MPI_SUM, 0, MPI_COMM_WORLD, ierr)
  if (nsend + nrecv > 2) total = total + 1
  if (rank == 0 .and. total == 0) print '(a)', 'PASS profile'
  if (rank == 0 .and. total /= 0) print '(a,i0)', 'FAIL profile: errors ', total
  call MPI_Finalize(ierr)
end program profile

subroutine MPI_Send(buf, count, datatype, dest, tag, comm, ierror)
  use mpi
  implicit none
  integer :: count, datatype, dest, tag, comm, ierror
  integer :: buf(*)
  integer :: nsend, nrecv, nbcast, items
  common /counts/ nsend, nrecv, nbcast, items
  nsend = nsend + 1
  items = items + count
  call PMPI_Send(buf, count, datatype, dest, tag, comm, ierror)
end subroutine MPI_Send

subroutine MPI_Recv(buf, count, datatype, source, tag, comm, status, ierror)
  use mpi
  implicit none
  integer :: count, datatype, source, tag, comm, status(MPI_STATUS_SIZE), ierror
  integer :: buf(*)
  integer :: nsend, nrecv, nbcast, items
  common /counts/ nsend, nrecv, nbcast, items
  nrecv = nrecv + 1
  items = items + count
  call PMPI_Recv(buf, count, datatype, source, tag, comm, status, ierror)
end subroutine MPI_Recv

subroutine MPI_Bcast(buf, count, datatype, root, comm, ierror)
  use mpi
  implicit none
  integer :: count, datatype, root, comm, ierror
  integer :: buf(*)
  integer :: nsend, nrecv, nbcast, items
  common /counts/ nsend, nrecv, nbcast, items
  nbcast = nbcast + 1
  items = items + count
  call PMPI_Bcast(buf, count, datatype, root, comm, ierror)
end subroutine MPI_Bcast
